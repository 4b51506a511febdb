"""Chat prompts rendered by Jinja2 the way transformers' apply_chat_template does.

Templates: SmolLM2's, read from the GGUF (argument, else $FLASHSVD_SMOLLM2_GGUF),
and the published Llama-2-chat and Llama-3-Instruct templates (copied below
from their tokenizer_config.json). The leading BOS of the Llama outputs is cut
off: flashsvd leaves the first BOS to encode(add_bos). Writes
tests/fixtures/tokenizer/chat_templates.json. Needs `jinja2` and `gguf`.
"""
import os
import sys

from gguf import GGUFReader
from jinja2.sandbox import ImmutableSandboxedEnvironment

from samples import write_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

LLAMA2 = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
    "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)
LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim"
    " + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

CONVERSATIONS = [
    [{"role": "user", "content": "Hi!"}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "What is 2+2?"}],
    [{"role": "user", "content": "  Tell me a joke.\n"}, {"role": "assistant", "content": "No. "},
     {"role": "user", "content": "Please, über-nett 😀"}],
    [{"role": "system", "content": "S"}, {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
     {"role": "user", "content": "c"}],
]


def smollm2_template(gguf_path):
    f = GGUFReader(gguf_path).fields["tokenizer.chat_template"]
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def render(template, messages, generation_prompt, bos, eos):
    def raise_exception(msg):
        raise ValueError(msg)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    out = env.from_string(template).render(messages=messages, add_generation_prompt=generation_prompt,
                                           bos_token=bos, eos_token=eos)
    return out[len(bos):] if bos and out.startswith(bos) else out


def main():
    gguf_path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FLASHSVD_SMOLLM2_GGUF", "")
    if not gguf_path:
        sys.exit("usage: make_chat_fixture.py SmolLM2-135M-Instruct.Q4_1.gguf")
    styles = {
        "smollm2": (smollm2_template(gguf_path), "", "<|im_end|>"),
        "llama2": (LLAMA2, "<s>", "</s>"),
        "llama3": (LLAMA3, "<|begin_of_text|>", "<|eot_id|>"),
    }
    cases = []
    for name, (template, bos, eos) in styles.items():
        for messages in CONVERSATIONS:
            for generation_prompt in (False, True):
                if name == "llama2" and generation_prompt:
                    continue  # the Llama-2 template has no generation prompt
                cases.append({"style": name, "messages": messages, "add_generation_prompt": generation_prompt,
                              "text": render(template, messages, generation_prompt, bos, eos)})
    header = {
        "generator": "tests/tokenizer/make_chat_fixture.py",
        "templates": {name: t for name, (t, _, _) in styles.items()},
    }
    path = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "chat_templates.json")
    write_fixture(path, header, cases)
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
