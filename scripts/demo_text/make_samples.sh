#!/usr/bin/env bash
# Writes scripts/demo_text/samples.txt, the second part of the demo's
# calibration: the dense default model's own samples (32 seed prompts on
# everyday topics, none about code; 512 tokens each at temperature 0.8, fixed
# seeds, one CPU thread). 2,048 tokens of prose alone are too few to whiten
# 1,536-wide inputs, and what the model writes is what its compressed version
# must keep writing. Run once; the file is committed so the demo's numbers do
# not move.   bash scripts/demo_text/make_samples.sh [FLASHSVD]
set -euo pipefail
cd "$(dirname "$0")"
fsvd=${1:-../../build/flashsvd}
prompts=(
  "The history of the printing press" "Here is a simple recipe for vegetable soup:" "How to write a good cover letter"
  "Dear team,\n\nI wanted to let you know" "The main causes of the French Revolution were"
  "Once upon a time, in a small village by the sea," "Q: What is the difference between weather and climate?\nA:"
  "Photosynthesis is the process by which" "Tips for staying productive when working from home:"
  "The rules of chess are simple to learn:" "A beginner's guide to saving money" "Climate change affects agriculture in several ways."
  "Here are five ways to improve your sleep:" "The human heart has four chambers" "Step 1: Preheat the oven to 180 degrees."
  "Write a short story about a robot who learns to paint." "Why is the sky blue?" "The benefits of regular exercise include"
  "An introduction to the solar system" "How do vaccines work?" "The best way to learn a new language is" "Summary of the meeting:\n"
  "The Roman Empire reached its greatest extent" "Explain gravity to a five-year-old."
  "Product review: I bought this kettle last month and" "The water cycle describes how water moves" "A letter to my future self:\n\n"
  "The three branches of government are" "Travel guide: a weekend in Lisbon" "Frequently asked questions about adopting a cat"
  "The causes and effects of inflation" "How to plant tomatoes in a small garden"
)
requests=$(mktemp)
for i in "${!prompts[@]}"; do
  printf '{"prompt": "%s", "max_tokens": 512, "temperature": 0.8, "seed": %d}\n' "${prompts[$i]}" $((1000 + i))
done >"$requests"
"$fsvd" batch --input "$requests" -o - --max-batch 32 -t 1 2>/dev/null |
  python3 -c '
import json, sys
prompts = [json.loads(l)["prompt"] for l in open(sys.argv[1])]
for p, line in zip(prompts, sys.stdin):
    print(p + json.loads(line)["text"].rstrip() + "\n")' "$requests" >samples.txt
rm "$requests"
