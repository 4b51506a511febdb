# The demo's compression and prompt: sourced by scripts/demo.sh and read by
# tests/apps/demo_continuation_test.cpp (plain key="value" lines only).
# The lowest keep tried whose continuation does not loop (keep 0.8 and 0.9 do;
# bench/results/2026-12-02-compression/README.md).
demo_keep="0.95"
demo_compress_flags="--allocation budget --calib-tokens 2048 --calib-ctx 512"
demo_prompt="The three most important rules of writing clear code are"
demo_tokens="48"
