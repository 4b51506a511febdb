# The demo's compression and prompt: sourced by scripts/demo.sh and read by
# tests/apps/demo_continuation_test.cpp (plain key="value" lines only).
demo_keep="0.8"
demo_compress_flags="--sequential --refit --calib-tokens 2048 --calib-ctx 512"
demo_prompt="The three most important rules of writing clear code are"
demo_tokens="48"
