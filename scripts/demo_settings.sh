# The demo's compression and prompt: sourced by scripts/demo.sh and read by
# tests/apps/demo_continuation_test.cpp (plain key="value" lines only).
# Calibration: scripts/demo_text/calibration.txt then samples.txt (12,331
# tokens, all of them used). Measured with these settings on 2026-12-03 (the
# continuation test, in the full suite on the shared 2-core VM): compression
# 305 s wall alone at load average 1-3 (427 s for the whole test beside the
# rest of the suite); the compressed continuation scores perplexity 2.78
# under the dense model, the dense one 1.89 (bound 3.78), and passes the
# loop check; 121.1 M of 134.5 M parameters; evaluation text 29.15 against
# 20.58. Keep 0.8 loops on this prompt with this calibration
# (bench/results/2026-12-03-compress-time/README.md).
demo_keep="0.9"
demo_compress_flags="--sequential --refit-residual --allocation budget --calib-ctx 512"
demo_prompt="The three most important rules of writing clear code are"
demo_tokens="48"
