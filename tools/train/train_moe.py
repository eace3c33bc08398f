#!/usr/bin/env python3
"""train_moe.py: trains the tiny MoE (llama.cpp architecture glm4moe, with its
next-token-prediction block) on the corpus's train split.

Usage: train_moe.py CORPUS_DIR TOKENIZER_MODEL -o DIR [--steps N] [--seed S]
                    [--threads N] [--bench]

The model, in llama.cpp's glm4moe layout (GLM-4.5's graph):
  - tied embeddings (vocab x 256); RMSNorm everywhere (eps 1e-5)
  - 5 blocks: block 0 dense (SwiGLU, width 256), blocks 1-3 MoE, block 4 the
    next-token-prediction (MTP) block, which the forward pass skips
  - attention: 4 query heads, 2 key/value heads, head width 32, q/k/v biases,
    NEOX rotary on the first 16 dimensions of each head (partial rotary)
  - MoE: 8 routed experts of width 256, softmax routing, top 2, the two
    weights renormalised, plus one always-on shared expert of width 256
  - MTP block: h' = eh_proj([enorm(embed(x[t+1])); hnorm(h[t])]) with h the
    main model's output after output_norm, one more
    attention+MoE block, shared_head_norm, the tied head: predicts x[t+2]
Loss: cross-entropy of the next token + 0.3 x that of the MTP block + 0.01 x
the switch-style load-balancing loss of each MoE block.

Writes DIR/model.pt (state dict and config), DIR/curve.tsv (step, tokens,
train loss, MTP loss, held-out loss every 250 steps) and DIR/train.log.
Reproducible from --seed on one machine (data order, initialisation, the
torch generator); torch's threads make the last bits differ across machines.
"""
import argparse, math, os, sys, time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = dict(n_vocab=None, n_embd=256, n_head=4, n_head_kv=2, head_dim=32, n_rot=16, rope_base=10000.0,
              n_ff=256, n_layer=5, n_dense_lead=1, n_nextn=1, n_expert=8, n_expert_used=2, n_ff_exp=256,
              n_expert_shared=1, eps=1e-5, ctx=512)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(c, T):
    half = c["n_rot"] // 2
    inv = c["rope_base"] ** (-torch.arange(0, half, dtype=torch.float64) * 2 / c["n_rot"])
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope_neox(x, cos, sin, n_rot):
    # x: B, H, T, D; NEOX pairs dimension i with i + n_rot/2 inside the rotated part
    half = n_rot // 2
    x1, x2, rest = x[..., :half], x[..., half:n_rot], x[..., n_rot:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        d, hd = c["n_embd"], c["head_dim"]
        self.wq = nn.Linear(d, c["n_head"] * hd, bias=True)
        self.wk = nn.Linear(d, c["n_head_kv"] * hd, bias=True)
        self.wv = nn.Linear(d, c["n_head_kv"] * hd, bias=True)
        self.wo = nn.Linear(c["n_head"] * hd, d, bias=False)

    def forward(self, x, cos, sin, mask):
        c = self.c
        B, T, _ = x.shape
        hd, H, Hk = c["head_dim"], c["n_head"], c["n_head_kv"]
        q = self.wq(x).view(B, T, H, hd).transpose(1, 2)
        k = self.wk(x).view(B, T, Hk, hd).transpose(1, 2)
        v = self.wv(x).view(B, T, Hk, hd).transpose(1, 2)
        q = rope_neox(q, cos, sin, c["n_rot"])
        k = rope_neox(k, cos, sin, c["n_rot"])
        k = k.repeat_interleave(H // Hk, dim=1)
        v = v.repeat_interleave(H // Hk, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd) + mask
        y = att.softmax(-1) @ v
        return self.wo(y.transpose(1, 2).reshape(B, T, H * hd))


class Dense(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.gate = nn.Linear(d, ff, bias=False)
        self.up = nn.Linear(d, ff, bias=False)
        self.down = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class MoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        E, d, ff = c["n_expert"], c["n_embd"], c["n_ff_exp"]
        self.router = nn.Linear(d, E, bias=False)
        self.gate = nn.Parameter(torch.randn(E, ff, d) * 0.02)
        self.up = nn.Parameter(torch.randn(E, ff, d) * 0.02)
        self.down = nn.Parameter(torch.randn(E, d, ff) * 0.02)
        self.shared = Dense(d, ff * c["n_expert_shared"])
        self.last_topi = None

    def forward(self, x):
        c = self.c
        B, T, d = x.shape
        xf = x.reshape(-1, d)
        probs = self.router(xf).softmax(-1)
        topw, topi = probs.topk(c["n_expert_used"], dim=-1)
        topw = topw / topw.sum(-1, keepdim=True)
        self.last_topi = topi.detach()
        out = torch.zeros_like(xf)
        for e in range(c["n_expert"]):
            rows, slot = (topi == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            xe = xf.index_select(0, rows)
            h = F.silu(xe @ self.gate[e].t()) * (xe @ self.up[e].t())
            out.index_add_(0, rows, (h @ self.down[e].t()) * topw[rows, slot, None])
        # switch-style balance: fraction routed to e times mean probability of e
        frac = torch.zeros(c["n_expert"]).index_add_(0, topi.reshape(-1), torch.ones(topi.numel())) / topi.numel()
        self.aux = c["n_expert"] * (frac * probs.mean(0)).sum()
        return (out + self.shared(xf)).view(B, T, d)


class Block(nn.Module):
    def __init__(self, c, moe):
        super().__init__()
        self.attn_norm = RMSNorm(c["n_embd"], c["eps"])
        self.attn = Attention(c)
        self.post_attention_norm = RMSNorm(c["n_embd"], c["eps"])
        self.ffn = MoE(c) if moe else Dense(c["n_embd"], c["n_ff"])

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.post_attention_norm(x))


class TinyMoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        d = c["n_embd"]
        self.embed = nn.Embedding(c["n_vocab"], d)
        n_main = c["n_layer"] - c["n_nextn"]
        self.blocks = nn.ModuleList([Block(c, i >= c["n_dense_lead"]) for i in range(c["n_layer"])])
        self.output_norm = RMSNorm(d, c["eps"])
        # the next-token-prediction block's own parts (llama.cpp: blk.N.nextn.*)
        self.enorm = RMSNorm(d, c["eps"])
        self.hnorm = RMSNorm(d, c["eps"])
        self.eh_proj = nn.Linear(2 * d, d, bias=False)
        self.shared_head_norm = RMSNorm(d, c["eps"])
        self.n_main = n_main
        for name, p in self.named_parameters():
            if p.dim() == 2 and "norm" not in name:
                nn.init.normal_(p, std=0.02)
            if name.endswith("wo.weight") or name.endswith("down.weight") or name.endswith(".down"):
                with torch.no_grad():
                    p.mul_(1 / math.sqrt(2 * c["n_layer"]))
            if name.endswith(".bias"):
                nn.init.zeros_(p)

    def forward(self, idx, with_mtp=True):
        c = self.c
        B, T = idx.shape
        cos, sin = rope_tables(c, T)
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.embed(idx)
        for b in self.blocks[:self.n_main]:
            x = b(x, cos, sin, mask)
        hn = self.output_norm(x)
        logits = hn @ self.embed.weight.t()
        if not with_mtp:
            return logits, None
        # MTP: position t sees the main model's normed output h[t] (as GLM's and
        # DeepSeek's MTP take it) and the embedding of token t+1; predicts token t+2
        h = hn[:, :-1]
        e = self.embed(idx[:, 1:])
        m = self.eh_proj(torch.cat([self.enorm(e), self.hnorm(h)], dim=-1))
        cos2, sin2 = cos[:T - 1], sin[:T - 1]
        m = self.blocks[self.n_main](m, cos2, sin2, mask[:T - 1, :T - 1])
        logits2 = self.shared_head_norm(m) @ self.embed.weight.t()
        return logits, logits2

    def aux_loss(self):
        return sum(b.ffn.aux for b in self.blocks if isinstance(b.ffn, MoE))


def load_tokens(path, sp):
    ids = []
    with open(path, encoding="utf-8") as f:
        for doc in f.read().split("\n\n"):
            doc = doc.strip()
            if doc:
                ids.append(1)  # BOS starts each document
                ids.extend(sp.encode(doc))
    return np.array(ids, dtype=np.int16 if len(sp) < 32768 else np.int32)


def batch_of(tokens, rng, B, T):
    starts = rng.integers(0, len(tokens) - T - 1, size=B)
    return torch.from_numpy(np.stack([tokens[s:s + T + 1] for s in starts]).astype(np.int64))


@torch.no_grad()
def eval_loss(model, tokens, T, n_seq=16):
    model.eval()
    tot, cnt = 0.0, 0
    step = max(1, (len(tokens) - T - 1) // n_seq)
    for s in range(0, step * n_seq, step):
        x = torch.from_numpy(tokens[s:s + T + 1].astype(np.int64))[None]
        logits, _ = model(x[:, :-1], with_mtp=False)
        tot += F.cross_entropy(logits[0], x[0, 1:], reduction="sum").item()
        cnt += T
    model.train()
    return tot / cnt


def main():
    ap = argparse.ArgumentParser(description="Train the tiny glm4moe model.")
    ap.add_argument("corpus")
    ap.add_argument("tokenizer")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--steps", type=int, default=1600)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", action="store_true", help="time 6 steps and stop")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    sp = spm.SentencePieceProcessor(model_file=a.tokenizer)
    c = dict(CONFIG, n_vocab=len(sp))
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "train.log"), "a")

    def say(msg):
        print(msg, flush=True)
        log.write(msg + "\n")
        log.flush()

    t0 = time.time()
    train = load_tokens(os.path.join(a.corpus, "train.txt"), sp)
    held = load_tokens(os.path.join(a.corpus, "heldout.txt"), sp)
    say("tokens: train %d, held-out %d (%.0f s)" % (len(train), len(held), time.time() - t0))
    model = TinyMoE(c)
    n_params = sum(p.numel() for p in model.parameters())
    say("parameters: %d" % n_params)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    T, B = c["ctx"], a.batch
    warm = max(1, a.steps // 20)
    curve = open(os.path.join(a.out, "curve.tsv"), "w")
    curve.write("step\ttokens\ttrain_loss\tmtp_loss\theldout_loss\n")
    t0 = time.time()
    steps = 6 if a.bench else a.steps
    for step in range(1, steps + 1):
        lr = a.lr * (step / warm if step <= warm else 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / (a.steps - warm))))
        for g in opt.param_groups:
            g["lr"] = lr
        xb = batch_of(train, rng, B, T)
        logits, logits2 = model(xb[:, :-1])
        loss_main = F.cross_entropy(logits.reshape(-1, c["n_vocab"]), xb[:, 1:].reshape(-1))
        loss_mtp = F.cross_entropy(logits2.reshape(-1, c["n_vocab"]), xb[:, 2:].reshape(-1))
        loss = loss_main + 0.3 * loss_mtp + 0.01 * model.aux_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if a.bench:
            say("step %d: %.2f s" % (step, time.time() - t0))
            continue
        if step % 25 == 0 or step == 1:
            el = time.time() - t0
            say("step %d/%d loss %.3f mtp %.3f lr %.2e %.0f tok/s eta %.0f min" % (
                step, a.steps, loss_main.item(), loss_mtp.item(), lr, step * B * T / el, el / step * (a.steps - step) / 60))
        if step % 250 == 0 or step == a.steps:
            hl = eval_loss(model, held, T)
            curve.write("%d\t%d\t%.4f\t%.4f\t%.4f\n" % (step, step * B * T, loss_main.item(), loss_mtp.item(), hl))
            curve.flush()
            say("step %d held-out loss %.4f (ppl %.2f)" % (step, hl, math.exp(hl)))
            torch.save({"config": c, "state": model.state_dict(), "step": step, "seed": a.seed},
                       os.path.join(a.out, "model.pt.tmp"))
            os.replace(os.path.join(a.out, "model.pt.tmp"), os.path.join(a.out, "model.pt"))
    say("done in %.1f min" % ((time.time() - t0) / 60))


if __name__ == "__main__":
    main()
