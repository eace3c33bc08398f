#!/usr/bin/python3
"""mtp_reference_archs.py: the next-token-prediction (MTP) block's logits of
test_archs_llamacpp's models that carry one, in plain PyTorch written from
the published model code, as the reference strata's draft model must
reproduce (llama.cpp loads these blocks but never runs them).

Usage: /usr/bin/python3 tests/diag/mtp_reference_archs.py MODEL.gguf TOKENS.i32 OUT.logits.f32
           [--main LLAMACPP.logits.f32]

MODEL.gguf and TOKENS.i32 as `test_archs_llamacpp --write DIR` writes them
(glm4moe, glm4moe-qknorm, bailingmoe2, deepseek2-v3). OUT gets, for each position t but
the last, the block's logits for the token at t + 2 from the main model's
output at t (after output_norm) and the token at t + 1: (T - 1) rows of the
vocabulary's width, little-endian float32. With --main, the main model's
logits at every position are first checked against llama.cpp's
(tests/fixtures/archs/NAME.logits.f32): the reference's own layers are
llama.cpp's graph, within 1e-5 of each row's largest |logit|, or it stops.

The graphs, as llama.cpp runs the main models and as the models' own code
runs the block:
  - glm4moe (GLM-4.5): q/k/v with biases, optional per-head q/k RMSNorm,
    NEOX rotary on the first rope.dimension_count dims, FFN norm
    post_attention_norm; the block ends in nextn.shared_head_norm.
  - bailingmoe2 (Ling 2.0, modeling_bailing_moe_v2 / vLLM's Bailing MTP):
    one attn_qkv matrix, per-head q/k RMSNorm, the same rotary, FFN norm
    ffn_norm; the block ends in its own final_layernorm (layer_output_norm).
  - deepseek2 (DeepSeek V3): multi-head latent attention in llama.cpp's
    layout: q = wq_b(q_a_norm(wq_a x)) per head [nope | rope]; [c | k_rope] =
    wkv_a x, c through kv_a_norm; per head k_nope = wk_b c, v = wv_b c;
    rotary on the rope parts in llama.cpp's mode 0 (adjacent pairs), the
    scores scaled by 1/sqrt(nope + rope); FFN norm ffn_norm; the block ends
    in nextn.shared_head_norm.
  - all: a dense first layer (SwiGLU), then MoE: sigmoid router, the
    selection bias added for choosing only, experts kept within the best
    expert_group_used_count groups (a group scores its two best), top-k, the
    weights renormalised when expert_weights_norm and times
    expert_weights_scale, plus the shared expert.
  - the block (DeepSeek V3's MTP module): eh_proj [enorm(embed(t+1));
    hnorm(h_t)], one more layer at positions 0..T-2, its last norm, the head
    (nextn.shared_head_head, else output.weight, else the embedding).
Needs Debian's python3-torch and python3-numpy.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "train"))
from ref_io import read_gguf, write_rows  # noqa: E402

torch.set_default_dtype(torch.float64)  # a reference: round only at the end


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_norm(x, pos, n_rot, base):
    # llama.cpp's mode 0: rotates adjacent pairs (2i, 2i + 1) of the first n_rot dims
    inv = base ** (-torch.arange(0, n_rot // 2) * 2.0 / n_rot)
    ang = pos[:, None] * inv[None, :]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
    rot = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
    return torch.cat([rot, x[..., n_rot:]], dim=-1)


def rope_neox(x, pos, n_rot, base):
    # x: T, H, D; NEOX rotates pairs (i, i + n_rot/2) of the first n_rot dims
    half = n_rot // 2
    inv = base ** (-torch.arange(0, half) * 2.0 / n_rot)
    ang = pos[:, None] * inv[None, :]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    x1, x2, rest = x[..., :half], x[..., half:n_rot], x[..., n_rot:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


class Model:
    def __init__(self, path):
        kv, t = read_gguf(path)
        self.t = {k: torch.from_numpy(np.array(v, dtype=np.float64)) for k, v in t.items()}
        a = self.arch = kv["general.architecture"]
        if a not in ("glm4moe", "bailingmoe2", "deepseek2"):
            sys.exit("%s: architecture %s; this reference knows glm4moe, bailingmoe2 and deepseek2" % (path, a))
        g = lambda k, d=None: kv.get(a + "." + k, d)  # noqa: E731
        self.n_nextn = g("nextn_predict_layers", 0)
        if self.n_nextn < 1:
            sys.exit("%s: no next-token-prediction block (nextn_predict_layers)" % path)
        self.n_layer = g("block_count") - self.n_nextn
        self.D, self.H, self.Hk = g("embedding_length"), g("attention.head_count"), g("attention.head_count_kv")
        self.hd = self.D // self.H
        self.n_rot = g("rope.dimension_count", self.hd)
        self.base = g("rope.freq_base")
        self.eps = g("attention.layer_norm_rms_epsilon")
        self.lead = g("leading_dense_block_count", 0)
        self.K = g("expert_used_count")
        self.groups, self.groups_used = g("expert_group_count", 0), g("expert_group_used_count", 0)
        self.norm_w = bool(g("expert_weights_norm", False))
        self.scale = g("expert_weights_scale", 1.0)
        if g("expert_gating_func", 1) != 2:
            sys.exit("%s: this reference knows sigmoid routing (expert_gating_func 2) only" % path)
        self.ffn_norm = "post_attention_norm" if a == "glm4moe" else "ffn_norm"
        if a == "deepseek2":  # MLA: the q/k head widths before absorption, v's
            self.qk_mla, self.v_mla = g("attention.key_length_mla"), g("attention.value_length_mla")
            self.kv_lora = g("attention.kv_lora_rank")
            if g("rope.scaling.type") is not None:
                sys.exit("%s: this reference knows deepseek2 without rope scaling only" % path)

    def w(self, name, l=None):
        return self.t[name if l is None else "blk.%d.%s" % (l, name)]

    def has(self, name, l):
        return "blk.%d.%s" % (l, name) in self.t

    def mla(self, l, x, pos):
        T, H, R = x.shape[0], self.H, self.n_rot
        nope = self.qk_mla - R
        if self.has("attn_q_a.weight", l):
            q = rms(x @ self.w("attn_q_a.weight", l).T, self.w("attn_q_a_norm.weight", l), self.eps)
            q = q @ self.w("attn_q_b.weight", l).T
        else:
            q = x @ self.w("attn_q.weight", l).T
        q = q.view(T, H, self.qk_mla)
        q_nope, q_pe = q[..., :nope], rope_norm(q[..., nope:], pos, R, self.base)
        ckv = x @ self.w("attn_kv_a_mqa.weight", l).T
        c = rms(ckv[:, :self.kv_lora], self.w("attn_kv_a_norm.weight", l), self.eps)
        k_pe = rope_norm(ckv[:, None, self.kv_lora:], pos, R, self.base)  # one rope key for all heads
        k_nope = torch.einsum("hrn,tr->thn", self.w("attn_k_b.weight", l), c)  # wk_b: heads x rank x nope
        v = torch.einsum("hvr,tr->thv", self.w("attn_v_b.weight", l), c)  # wv_b: heads x v x rank
        att = torch.einsum("thd,shd->hts", q_nope, k_nope) + torch.einsum("thd,sd->hts", q_pe, k_pe[:, 0])
        att = att / np.sqrt(self.qk_mla) + torch.full((T, T), float("-inf")).triu(1)
        y = torch.einsum("hts,shv->thv", att.softmax(-1), v).reshape(T, H * self.v_mla)
        return y @ self.w("attn_output.weight", l).T

    def attention(self, l, x, pos):
        if self.arch == "deepseek2":
            return self.mla(l, x, pos)
        T = x.shape[0]
        H, Hk, hd = self.H, self.Hk, self.hd
        if self.has("attn_qkv.weight", l):
            qkv = x @ self.w("attn_qkv.weight", l).T
            q, k, v = qkv.split([H * hd, Hk * hd, Hk * hd], dim=-1)
        else:
            q, k, v = (x @ self.w("attn_%s.weight" % n, l).T for n in "qkv")
        if self.has("attn_q.bias", l):
            q, k, v = q + self.w("attn_q.bias", l), k + self.w("attn_k.bias", l), v + self.w("attn_v.bias", l)
        q, k, v = q.view(T, H, hd), k.view(T, Hk, hd), v.view(T, Hk, hd)
        if self.has("attn_q_norm.weight", l):
            q = rms(q, self.w("attn_q_norm.weight", l), self.eps)
            k = rms(k, self.w("attn_k_norm.weight", l), self.eps)
        q, k = rope_neox(q, pos, self.n_rot, self.base), rope_neox(k, pos, self.n_rot, self.base)
        k, v = k.repeat_interleave(H // Hk, dim=1), v.repeat_interleave(H // Hk, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / np.sqrt(hd)
        att = att + torch.full((T, T), float("-inf")).triu(1)
        y = torch.einsum("hts,shd->thd", att.softmax(-1), v).reshape(T, H * hd)
        return y @ self.w("attn_output.weight", l).T

    def swiglu(self, x, gate, up, down):
        return (torch.nn.functional.silu(x @ gate.T) * (x @ up.T)) @ down.T

    def moe(self, l, x):
        probs = torch.sigmoid(x @ self.w("ffn_gate_inp.weight", l).T)
        sel = probs + self.w("exp_probs_b.bias", l) if self.has("exp_probs_b.bias", l) else probs.clone()
        E = probs.shape[1]
        if self.groups:
            per = E // self.groups
            score = sel.view(-1, self.groups, per).topk(min(2, per), dim=-1).values.sum(-1)
            keep = torch.zeros_like(score, dtype=torch.bool)
            keep.scatter_(1, score.topk(self.groups_used, dim=-1).indices, True)
            sel = sel.masked_fill(~keep.repeat_interleave(per, dim=1), float("-inf"))
        top = sel.topk(self.K, dim=-1).indices
        wts = probs.gather(1, top)
        if self.norm_w:
            wts = wts / wts.sum(-1, keepdim=True)
        wts = wts * self.scale
        gate, up, down = (self.w("ffn_%s_exps.weight" % n, l) for n in ("gate", "up", "down"))
        out = torch.zeros_like(x)
        for i in range(x.shape[0]):
            for j in range(self.K):
                e = top[i, j]
                out[i] += wts[i, j] * self.swiglu(x[i:i + 1], gate[e], up[e], down[e])[0]
        sh = [self.w("ffn_%s_shexp.weight" % n, l) for n in ("gate", "up", "down")]
        return out + self.swiglu(x, *sh)

    def layer(self, l, x, pos):
        x = x + self.attention(l, rms(x, self.w("attn_norm.weight", l), self.eps), pos)
        h = rms(x, self.w(self.ffn_norm + ".weight", l), self.eps)
        if l < self.lead:
            return x + self.swiglu(h, *(self.w("ffn_%s.weight" % n, l) for n in ("gate", "up", "down")))
        return x + self.moe(l, h)

    def head(self, l):
        """The block's own head (l), else the model's."""
        own = ("blk.%d.nextn.shared_head_head.weight" % l,) if l is not None else ()
        for name in own + ("output.weight", "token_embd.weight"):
            if name in self.t:
                return self.t[name]

    def main_rows(self, ids):
        """The main model's output rows (after output_norm) and its logits."""
        x = self.w("token_embd.weight")[ids]
        pos = torch.arange(len(ids), dtype=torch.float64)
        for l in range(self.n_layer):
            x = self.layer(l, x, pos)
        h = rms(x, self.w("output_norm.weight"), self.eps)
        return h, h @ self.head(None).T

    def mtp_logits(self, ids, h):
        T = len(ids)
        pos = torch.arange(T, dtype=torch.float64)
        l = self.n_layer
        emb_name = "blk.%d.nextn.embed_tokens.weight" % l
        emb = self.t[emb_name] if emb_name in self.t else self.w("token_embd.weight")
        e = rms(emb[ids[1:]], self.w("nextn.enorm.weight", l), self.eps)
        hh = rms(h[:-1], self.w("nextn.hnorm.weight", l), self.eps)
        m = torch.cat([e, hh], dim=-1) @ self.w("nextn.eh_proj.weight", l).T
        m = self.layer(l, m, pos[:T - 1])
        last = "layer_output_norm" if self.arch == "bailingmoe2" else "nextn.shared_head_norm"
        m = rms(m, self.w(last + ".weight", l), self.eps)
        return m @ self.head(l).T


def main():
    args = sys.argv[1:]
    main_ref = None
    if len(args) == 5 and args[3] == "--main":
        main_ref, args = args[4], args[:3]
    if len(args) != 3:
        sys.exit(__doc__)
    model_path, tok_path, out = args
    ids = torch.from_numpy(np.fromfile(tok_path, dtype="<i4").astype(np.int64))
    model = Model(model_path)
    with torch.no_grad():
        h, logits = model.main_rows(ids)
        if main_ref:
            ref = np.fromfile(main_ref, dtype="<f4").reshape(logits.shape)
            rel = max(np.abs(logits[r].numpy() - ref[r]).max() / np.abs(ref[r]).max() for r in range(len(ref)))
            print("%s: the main model against llama.cpp's %s: max |diff| / max|logit| = %.3g"
                  % (model_path, main_ref, rel))
            if rel > 1e-5:
                sys.exit("the reference's main model is not llama.cpp's: stopping")
        rows = model.mtp_logits(ids, h).numpy()
    write_rows(out, rows)


if __name__ == "__main__":
    main()
