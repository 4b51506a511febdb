"""Texts shared by the tokenizer fixture generators: scripts, whitespace, code, digits."""

MULTILINGUAL = [
    "Hello world",
    "Once upon a time, there was a little girl named Lily.",
    "Grüße aus München! Äpfel, Öl und Übermut sind schön.",
    "L'été dernier, nous sommes allés à la plage près de Nîmes — c'était génial.",
    "我们今天去公园散步，天气很好。",
    "日本語のテキストとカタカナ、ひらがなを混ぜる。",
    "Привет, как дела? Всё хорошо.",
    "مرحبا بالعالم، كيف حالك؟",
    "Emoji: 😀🎉👍🏽 and a family 👨‍👩‍👧‍👦.",
    "def f(x):\n\treturn x  *  2\n\n\tif x:\n\t\tpass",
    "int main() {\n    printf(\"%d\\n\", 42);\n    return 0;\n}",
    "Numbers: 0 7 12345 3.14159 1,000,000 2024-06-01",
    "  leading spaces and trailing   ",
    "multiple     spaces\t\ttabs\n\n\nnewlines",
    "It's, they're, we've, I'm, you'll, he'd",
    "MiXeD CaSe WORDS and_snake_case and camelCaseNames",
    "x",
    " ",
    "\n",
]


def write_fixture(path, header, cases):
    """JSON with one case per line, so diffs of regenerated fixtures stay readable."""
    import json
    lines = ["{"]
    for key, value in header.items():
        lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append(' "cases": [')
    body = [" " + json.dumps(c, ensure_ascii=False) for c in cases]
    lines.append(",\n".join(body))
    lines.append(" ]")
    lines.append("}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
