#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make-tiny-gguf.py OUT.gguf [--seed N]: writes a tiny llama-architecture model with random
weights (fixed seed, so the same file every time) for llama-server in the EPP's tests and
benchmarks. Its answers are noise; what matters is that llama-server loads it, tokenizes,
keeps a prefix cache and exports metrics like a real deployment. No model is downloaded.

Shape: n_embd 128, 2 layers, 4 heads, n_ff 256, context 4096, F32 (~440k parameters, ~1.7 MB).
Vocabulary: <unk> <s> </s>, the 256 byte tokens and one token per printable ASCII character
plus the space marker, so a prompt of N ASCII characters is about N tokens.
Needs gguf (Debian sid's python3-gguf, through PYTHONPATH: scripts/llama-server.sh --fetch-only
unpacks it under LLAMA_PREFIX/usr/lib/python3/dist-packages) and numpy (Debian 12's).
"""
import argparse
import sys

try:
    import gguf
    import numpy as np
except ImportError as e:
    sys.exit(f"make-tiny-gguf.py: {e.name} is missing: put sid's python3-gguf on PYTHONPATH, install python3-numpy")

N_EMBD, N_LAYER, N_HEAD, N_FF, N_CTX = 128, 2, 4, 256, 4096
# A minimal role-tagged template: llama-server renders /v1/chat/completions with it.
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def vocabulary():
    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    # sentencepiece's space marker, then printable ASCII: one token per character
    tokens += ["\u2581"] + [chr(c) for c in range(0x21, 0x7F)]
    types += [gguf.TokenType.NORMAL] * (1 + 0x7F - 0x21)
    scores = [0.0] * len(tokens)
    return tokens, types, scores


def main():
    ap = argparse.ArgumentParser(description="write a tiny random-weight llama GGUF")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=40)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    tokens, types, scores = vocabulary()
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("enflame-epp-tiny")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(n_vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_chat_template(CHAT_TEMPLATE)

    def tensor(name, *shape):  # numpy shape: ggml's dimensions reversed
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    def norm(name):
        w.add_tensor(name, np.ones(N_EMBD, dtype=np.float32))

    tensor("token_embd.weight", n_vocab, N_EMBD)
    for i in range(N_LAYER):
        norm(f"blk.{i}.attn_norm.weight")
        for t in ("q", "k", "v", "output"):
            tensor(f"blk.{i}.attn_{t}.weight", N_EMBD, N_EMBD)
        norm(f"blk.{i}.ffn_norm.weight")
        tensor(f"blk.{i}.ffn_gate.weight", N_FF, N_EMBD)
        tensor(f"blk.{i}.ffn_up.weight", N_FF, N_EMBD)
        tensor(f"blk.{i}.ffn_down.weight", N_EMBD, N_FF)
    norm("output_norm.weight")
    tensor("output.weight", n_vocab, N_EMBD)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
