# The demo's compression and prompt: sourced by scripts/demo.sh and read by
# tests/apps/demo_continuation_test.cpp (plain key="value" lines only).
# Calibration: scripts/demo_text/calibration.txt then samples.txt (about
# 12,300 tokens, all of them used). Measured with these settings on
# 2026-12-02 (the continuation test, run once): the compressed continuation
# scores perplexity 2.48 under the dense model, the dense one 1.89; one
# 4-gram occurs three times ("rule is to avoid", a numbered list), above the
# test's bound of two (bench/results/2026-12-02-compression/README.md).
demo_keep="0.9"
demo_compress_flags="--sequential --refit-residual --allocation budget --calib-ctx 512"
demo_prompt="The three most important rules of writing clear code are"
demo_tokens="48"
