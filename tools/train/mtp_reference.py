#!/usr/bin/python3
"""mtp_reference.py: the next-token-prediction (MTP) block's logits of the
shipped tiny MoE, computed by the training code itself (train_moe.py's
TinyMoE, in PyTorch), as the reference strata's draft model must reproduce.

Usage: /usr/bin/python3 tools/train/mtp_reference.py MODEL.gguf TOKENS.i32 OUT.logits.f32

MODEL.gguf is models/tiny-moe/tiny-moe.gguf (its F16 matrices widened to
F32, exactly); TOKENS.i32 the test's token ids (little-endian int32), as
`test_tiny_moe --write DIR` writes them. OUT gets, for each position t but
the last, the MTP block's logits for the token at t + 2 given the main
model's output at t and the token at t + 1: (T - 1) rows of the vocabulary's
width, little-endian float32. Needs Debian's python3-torch and
python3-sentencepiece (train_moe.py imports it).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_moe  # noqa: E402  (the model's own definition)

from ref_io import read_gguf, write_rows  # noqa: E402


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_path, tok_path, out = sys.argv[1:]
    kv, t = read_gguf(model_path)
    A = "glm4moe"
    c = dict(train_moe.CONFIG)
    c["n_vocab"] = t["token_embd.weight"].shape[0]
    c["n_layer"] = kv[A + ".block_count"]
    c["n_nextn"] = kv[A + ".nextn_predict_layers"]
    model = train_moe.TinyMoE(c)
    sd = {"embed.weight": t["token_embd.weight"], "output_norm.weight": t["output_norm.weight"]}
    n_main = c["n_layer"] - c["n_nextn"]
    for i in range(c["n_layer"]):
        p, b = "blocks.%d." % i, "blk.%d." % i
        if i >= n_main:
            for mine, theirs in (("eh_proj", "eh_proj"), ("enorm", "enorm"), ("hnorm", "hnorm"),
                                 ("shared_head_norm", "shared_head_norm")):
                sd[mine + ".weight"] = t[b + "nextn.%s.weight" % theirs]
        sd[p + "attn_norm.weight"] = t[b + "attn_norm.weight"]
        for name, m in (("attn_q", "wq"), ("attn_k", "wk"), ("attn_v", "wv")):
            sd[p + "attn.%s.weight" % m] = t[b + name + ".weight"]
            sd[p + "attn.%s.bias" % m] = t[b + name + ".bias"]
        sd[p + "attn.wo.weight"] = t[b + "attn_output.weight"]
        sd[p + "post_attention_norm.weight"] = t[b + "post_attention_norm.weight"]
        if i < c["n_dense_lead"]:
            for name in ("gate", "up", "down"):
                sd[p + "ffn.%s.weight" % name] = t[b + "ffn_%s.weight" % name]
            continue
        sd[p + "ffn.router.weight"] = t[b + "ffn_gate_inp.weight"]
        for name in ("gate", "up", "down"):
            sd[p + "ffn.%s" % name] = t[b + "ffn_%s_exps.weight" % name]
            sd[p + "ffn.shared.%s.weight" % name] = t[b + "ffn_%s_shexp.weight" % name]
    missing = model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in sd.items()}, strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    ids = np.fromfile(tok_path, dtype="<i4").astype(np.int64)
    model.eval()
    with torch.no_grad():
        _, logits2 = model(torch.from_numpy(ids)[None], with_mtp=True)
    rows = logits2[0].numpy()
    write_rows(out, rows)


if __name__ == "__main__":
    main()
