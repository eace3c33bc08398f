#!/usr/bin/env python3
"""gguf_write.py: the tiny MoE (train_moe.py's model.pt) and its sentencepiece
tokenizer as a GGUF v3 file that llama.cpp and strata load as glm4moe.

Usage: gguf_write.py MODEL_PT TOKENIZER_MODEL -o OUT.gguf [--name TEXT] [--f32]

Contract:
  - Matrices and expert tensors F16; vectors (norms, biases), the router
    (ffn_gate_inp) and the selection bias (exp_probs_b, zero: softmax
    routing needs none, llama.cpp's glm4moe requires the tensor) F32, as
    llama.cpp's own converter stores them. general.file_type 1 (mostly F16).
  - No output.weight: the head is tied to token_embd, which llama.cpp and
    strata use when output.weight is absent.
  - The last block is the next-token-prediction block: nextn.eh_proj,
    nextn.enorm, nextn.hnorm, nextn.shared_head_norm, then a MoE block's
    tensors; nextn_predict_layers 1. No nextn.embed_tokens or
    nextn.shared_head_head: the block shares the embedding and the head.
  - The vocabulary is llama.cpp's "llama" (sentencepiece) kind: tokens,
    scores, token types (normal 1, unknown 2, control 3, unused 5, byte 6),
    BOS 1 / EOS 2 / UNK 0, BOS added, EOS not.
  - The file is written to OUT.tmp and renamed; an error leaves no OUT, and
    an existing OUT is refused, never overwritten.
GGUFWriter is also the writer of tests/fixtures/hf_vocab_gguf.py (vocab-only
GGUFs), which runs without numpy: numpy is imported only for tensors.
"""
import argparse, os, struct, sys

ALIGN = 32
GGML_F32, GGML_F16 = 0, 1
T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR = 4, 5, 6, 7, 8, 9


class GGUFWriter:
    """A GGUF v3 writer: key/values, then tensors laid out 32-byte aligned."""

    def __init__(self):
        self.kv = []
        self.tensors = []

    @staticmethod
    def _str(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def add(self, key, vtype, value):
        if vtype == T_STR:
            payload = self._str(value)
        elif vtype == T_BOOL:
            payload = struct.pack("<B", 1 if value else 0)
        else:
            payload = struct.pack({T_U32: "<I", T_I32: "<i", T_F32: "<f"}[vtype], value)
        self.kv.append(self._str(key) + struct.pack("<I", vtype) + payload)

    def add_array(self, key, etype, items):
        if etype == T_STR:
            body = b"".join(self._str(s) for s in items)
        else:
            body = struct.pack("<%d%s" % (len(items), {T_I32: "i", T_F32: "f"}[etype]), *items)
        self.kv.append(self._str(key) + struct.pack("<IIQ", T_ARR, etype, len(items)) + body)

    def add_tensor(self, name, array, ggml_type):
        import numpy as np
        a = np.ascontiguousarray(array, dtype="<f4" if ggml_type == GGML_F32 else "<f2")
        self.tensors.append((name, a, ggml_type))

    def write(self, path):
        """Refuses an existing path (FileExistsError); OSError on a failed write."""
        if os.path.exists(path):
            raise FileExistsError("%s: exists; not overwritten" % path)
        head = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))] + self.kv
        offset, infos = 0, []
        for name, a, t in self.tensors:
            dims = list(reversed(a.shape))  # ggml lists the fastest-moving dimension first
            infos.append(self._str(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims) +
                         struct.pack("<IQ", t, offset))
            offset += (a.nbytes + ALIGN - 1) // ALIGN * ALIGN
        blob = b"".join(head + infos)
        tmp = path + ".tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(blob)
                f.write(b"\0" * (-len(blob) % ALIGN))
                for _, a, _ in self.tensors:
                    f.write(a.tobytes())
                    f.write(b"\0" * (-a.nbytes % ALIGN))
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise


def add_vocab(w, tokenizer_path):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=tokenizer_path)
    tokens, scores, types = [], [], []
    for i in range(len(sp)):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else
                     5 if sp.is_unused(i) else 1)
    w.add("tokenizer.ggml.model", T_STR, "llama")
    w.add_array("tokenizer.ggml.tokens", T_STR, tokens)
    w.add_array("tokenizer.ggml.scores", T_F32, scores)
    w.add_array("tokenizer.ggml.token_type", T_I32, types)
    w.add("tokenizer.ggml.bos_token_id", T_U32, sp.bos_id())
    w.add("tokenizer.ggml.eos_token_id", T_U32, sp.eos_id())
    w.add("tokenizer.ggml.unknown_token_id", T_U32, sp.unk_id())
    w.add("tokenizer.ggml.add_bos_token", T_BOOL, True)
    w.add("tokenizer.ggml.add_eos_token", T_BOOL, False)
    return len(sp)


def export(model_pt, tokenizer_path, out, name, mat_type=GGML_F16):
    import numpy as np
    import torch
    ck = torch.load(model_pt, map_location="cpu")
    c, sd = ck["config"], {k: v.float().numpy() for k, v in ck["state"].items()}
    A = "glm4moe"
    w = GGUFWriter()
    w.add("general.architecture", T_STR, A)
    w.add("general.name", T_STR, name)
    w.add("general.file_type", T_U32, 1 if mat_type == GGML_F16 else 0)
    for key, v in (("context_length", c["ctx"]), ("embedding_length", c["n_embd"]), ("block_count", c["n_layer"]),
                   ("feed_forward_length", c["n_ff"]), ("attention.head_count", c["n_head"]),
                   ("attention.head_count_kv", c["n_head_kv"]), ("attention.key_length", c["head_dim"]),
                   ("attention.value_length", c["head_dim"]), ("rope.dimension_count", c["n_rot"]),
                   ("expert_count", c["n_expert"]), ("expert_used_count", c["n_expert_used"]),
                   ("expert_feed_forward_length", c["n_ff_exp"]), ("expert_shared_count", c["n_expert_shared"]),
                   ("leading_dense_block_count", c["n_dense_lead"]), ("nextn_predict_layers", c["n_nextn"]),
                   ("expert_gating_func", 1)):  # 1: softmax (llama.cpp's glm4moe defaults to sigmoid)
        w.add("%s.%s" % (A, key), T_U32, v)
    w.add(A + ".rope.freq_base", T_F32, c["rope_base"])
    w.add(A + ".attention.layer_norm_rms_epsilon", T_F32, c["eps"])
    w.add(A + ".expert_weights_scale", T_F32, 1.0)
    w.add(A + ".expert_weights_norm", T_BOOL, True)
    n_vocab = add_vocab(w, tokenizer_path)
    if n_vocab != c["n_vocab"]:
        sys.exit("gguf_write.py: %s: %d tokens, the model has %d" % (tokenizer_path, n_vocab, c["n_vocab"]))

    def f16(n, key):
        w.add_tensor(n, sd[key], mat_type)

    def f32(n, key):
        w.add_tensor(n, sd[key], GGML_F32)

    f16("token_embd.weight", "embed.weight")
    f32("output_norm.weight", "output_norm.weight")
    n_main = c["n_layer"] - c["n_nextn"]
    for i in range(c["n_layer"]):
        p, b = "blocks.%d." % i, "blk.%d." % i
        if i >= n_main:
            f16(b + "nextn.eh_proj.weight", "eh_proj.weight")
            f32(b + "nextn.enorm.weight", "enorm.weight")
            f32(b + "nextn.hnorm.weight", "hnorm.weight")
            f32(b + "nextn.shared_head_norm.weight", "shared_head_norm.weight")
        f32(b + "attn_norm.weight", p + "attn_norm.weight")
        for t, m in (("attn_q", "wq"), ("attn_k", "wk"), ("attn_v", "wv")):
            f16(b + t + ".weight", p + "attn.%s.weight" % m)
            f32(b + t + ".bias", p + "attn.%s.bias" % m)
        f16(b + "attn_output.weight", p + "attn.wo.weight")
        f32(b + "post_attention_norm.weight", p + "post_attention_norm.weight")
        if i < c["n_dense_lead"]:
            for t in ("gate", "up", "down"):
                f16(b + "ffn_%s.weight" % t, p + "ffn.%s.weight" % t)
            continue
        f32(b + "ffn_gate_inp.weight", p + "ffn.router.weight")
        w.add_tensor(b + "exp_probs_b.bias", np.zeros(c["n_expert"], dtype=np.float32), GGML_F32)
        for t in ("gate", "up", "down"):
            f16(b + "ffn_%s_exps.weight" % t, p + "ffn.%s" % t)
            f16(b + "ffn_%s_shexp.weight" % t, p + "ffn.shared.%s.weight" % t)
    w.write(out)


def main():
    ap = argparse.ArgumentParser(description="Write the tiny MoE as a GGUF (glm4moe, F16).")
    ap.add_argument("model_pt")
    ap.add_argument("tokenizer")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--name", default="strata tiny-moe")
    ap.add_argument("--f32", action="store_true", help="matrices in F32 too (for agreement diagnostics)")
    a = ap.parse_args()
    for p in (a.model_pt, a.tokenizer):
        if not os.path.isfile(p):
            sys.exit("gguf_write.py: %s: no such file" % p)
    if os.path.exists(a.out):
        sys.exit("gguf_write.py: %s: exists; not overwritten (move it away first)" % a.out)
    export(a.model_pt, a.tokenizer, a.out, a.name, GGML_F32 if a.f32 else GGML_F16)
    print("wrote %s (%d bytes)" % (a.out, os.path.getsize(a.out)))


if __name__ == "__main__":
    main()
