#!/usr/bin/python3
"""A plain PyTorch eager implementation of the Wiola model (../shared/SPEC.md,
"The layer"), for tools/bench-vs-torch.sh: the same shapes, the same AdamW
and clipping as wiola-train, timed over training steps on random tokens.

It is a benchmark, not a reference: nothing in wiola's tests depends on it,
and it needs Debian's python3-torch (1.13) for /usr/bin/python3:
    apt-get install python3-torch

    /usr/bin/python3 tools/bench/torch_wiola.py --d 256 --layers 4 --heads 4 \
        --kv-heads 2 --dsff-a 256 --dsff-b 1024 --seq-len 256 --vocab 2048 \
        --micro-batch 4 --atm causal --threads 2 --steps 10 --warmup 2

Prints one line: "torch tokens/s <x> step_ms <y> ...".

What it mirrors: WRMSNorm, SRPE (rotate-half pairs, coefficients in double),
GCLA with key/value group h % Hkv, causal prefix-mean summaries of X_{l-1}
and X_l as the context, the β-blend, the σ gate, DSFF (SiLU product, exact
GELU, σ fusion), the tied head and mean cross-entropy, AdamW (β 0.9/0.95,
weight decay 0.1 on matrices and the embedding) after global-norm clipping
to 1.0. Causal ATM (--atm causal) runs in layers [L/3, 2L/3): the greedy
adjacent merge on cos(X̃[t], X̃[t+1]) > τ, keys/values of the merged groups
followed by the pairs' unmerged first members, and a visibility mask; the
attention itself is plain masked softmax over T x T (what eager code does).
"""
import argparse
import math
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.stderr.write("torch_wiola.py: PyTorch is missing; install Debian's python3-torch "
                     "(apt-get install python3-torch) and run with /usr/bin/python3\n")
    sys.exit(3)


def srpe_tables(T, dh, theta0=10000.0, k_s=8.0, a_s=0.1, f_s=0.01):
    half = dh // 2
    j = torch.arange(half, dtype=torch.float64)
    omega = theta0 ** (-2.0 * j / dh)
    p = torch.arange(T, dtype=torch.float64)[:, None]
    angle = p * omega * (1.0 + 1.0 / k_s)
    radius = 1.0 + a_s * torch.sin(p * f_s * omega)
    return (radius * torch.cos(angle)).float(), (radius * torch.sin(angle)).float()


def srpe(x, cos, sin):
    # x [B, T, heads, dh]; cos, sin [T, dh/2] (or gathered per row: [B, T, dh/2])
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    if cos.dim() == 2:
        c, s = cos[None, :, None, :], sin[None, :, None, :]
    else:
        c, s = cos[:, :, None, :], sin[:, :, None, :]
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1)


class Norm(torch.nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.ones(d))
        self.delta = torch.nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        z = x + self.delta
        return self.gamma * z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + self.eps)


def linear(n_out, n_in, std):
    w = torch.nn.Parameter(torch.empty(n_out, n_in))
    torch.nn.init.normal_(w, 0.0, std)
    return w


def greedy_merge(rho, tau):
    """rho [T] (host list) -> (first, second, group_of) as in token_plan.cpp."""
    T = len(rho)
    first, second, group_of = [], [], [-1] * T
    t = 0
    while t < T:
        g = len(first)
        group_of[t] = g
        first.append(t)
        if t + 1 < T and rho[t] > tau:
            group_of[t + 1] = g
            second.append(t + 1)
            t += 2
        else:
            second.append(-1)
            t += 1
    return first, second, group_of


class Layer(torch.nn.Module):
    def __init__(self, a, std_out):
        super().__init__()
        d, H, Hkv = a.d, a.heads, a.kv_heads
        dh = d // H
        self.H, self.Hkv, self.dh = H, Hkv, dh
        self.attn_norm = Norm(d, a.eps)
        self.wq = linear(H * dh, d, a.init_std)
        self.wk = linear(Hkv * dh, d, a.init_std)
        self.wv = linear(Hkv * dh, d, a.init_std)
        self.wck = linear(Hkv * dh, d, a.init_std)
        self.wcv = linear(Hkv * dh, d, a.init_std)
        self.wgate = linear(H * dh, d, a.init_std)
        self.wo = linear(d, H * dh, std_out)
        self.phi = torch.nn.Parameter(torch.full((1,), -3.0))
        self.ffn_norm = Norm(d, a.eps)
        self.a_gate = linear(a.dsff_a, d, a.init_std)
        self.a_up = linear(a.dsff_a, d, a.init_std)
        self.a_down = linear(d, a.dsff_a, std_out)
        self.b_up = linear(a.dsff_b, d, a.init_std)
        self.b_down = linear(d, a.dsff_b, std_out)
        self.fuse = linear(d, 2 * d, a.init_std)
        self.group = torch.tensor([h % Hkv for h in range(H)])

    def heads(self, x, n):
        B, T, _ = x.shape
        return x.view(B, T, n, self.dh)

    def attention(self, xn, ctx, cos, sin, atm, tau):
        B, T, _ = xn.shape
        H, dh = self.H, self.dh
        scale = 1.0 / math.sqrt(dh)
        q = srpe(self.heads(xn @ self.wq.t(), H), cos, sin)
        if atm:
            # The merge decision (no gradient), then key/value rows: groups,
            # then the unmerged first members of pairs.
            with torch.no_grad():
                rho = F.cosine_similarity(xn[:, :-1], xn[:, 1:], dim=-1)
                rho = rho.tolist()
            src_a, src_b, pos_kv, masks = [], [], [], []
            for bi in range(B):
                first, second, group_of = greedy_merge(rho[bi] + [-2.0], tau)
                G = len(first)
                a_rows = list(first)
                b_rows = [s if s >= 0 else f for f, s in zip(first, second)]
                extra_of = {}
                for f, s in zip(first, second):
                    if s >= 0:
                        extra_of[f] = len(a_rows)
                        a_rows.append(f)
                        b_rows.append(f)
                pos = [first[g] for g in range(G)] + [f for f, s in zip(first, second) if s >= 0]
                vis = torch.zeros(T, T, dtype=torch.bool)
                for t in range(T):
                    g = group_of[t]
                    if t in extra_of:
                        vis[t, :g] = True
                        vis[t, extra_of[t]] = True
                    else:
                        vis[t, :g + 1] = True
                src_a.append(torch.tensor(a_rows) + bi * T)
                src_b.append(torch.tensor(b_rows) + bi * T)
                pos_kv.append(torch.tensor(pos))
                masks.append(vis)
            flat = xn.reshape(B * T, -1)
            xkv = (0.5 * (flat[torch.cat(src_a)] + flat[torch.cat(src_b)])).view(B, T, -1)
            pos_kv = torch.stack(pos_kv)
            k = srpe(self.heads(xkv @ self.wk.t(), self.Hkv), cos[pos_kv], sin[pos_kv])
            v = self.heads(xkv @ self.wv.t(), self.Hkv)
            mask = torch.stack(masks)[:, None]
        else:
            k = srpe(self.heads(xn @ self.wk.t(), self.Hkv), cos, sin)
            v = self.heads(xn @ self.wv.t(), self.Hkv)
            mask = torch.ones(T, T, dtype=torch.bool).tril()[None, None]
        qh = q.transpose(1, 2)                                   # [B, H, T, dh]
        kh = k[:, :, self.group].transpose(1, 2)
        vh = v[:, :, self.group].transpose(1, 2)
        s = (qh @ kh.transpose(-1, -2)) * scale
        s = s.masked_fill(~mask, float("-inf"))
        o_self = (torch.softmax(s, dim=-1) @ vh).transpose(1, 2)  # [B, T, H, dh]
        # Context sub-attention over the summaries of this layer's context.
        kc = torch.stack([self.heads(c @ self.wck.t(), self.Hkv)[:, :, self.group] for c in ctx], 3)
        vc = torch.stack([self.heads(c @ self.wcv.t(), self.Hkv)[:, :, self.group] for c in ctx], 3)
        w = torch.softmax((q[:, :, :, None, :] * kc).sum(-1) * scale, dim=-1)  # [B, T, H, n]
        o_ctx = (w[..., None] * vc).sum(3)
        beta = torch.sigmoid(self.phi)
        o = ((1 - beta) * o_self + beta * o_ctx).reshape(B, T, H * dh)
        g = torch.sigmoid(xn @ self.wgate.t())
        return (g * o) @ self.wo.t()

    def forward(self, x, ctx, cos, sin, atm, tau):
        xh = x + self.attention(self.attn_norm(x), ctx, cos, sin, atm, tau)
        xn = self.ffn_norm(xh)
        a = (F.silu(xn @ self.a_gate.t()) * (xn @ self.a_up.t())) @ self.a_down.t()
        b = F.gelu(xn @ self.b_up.t()) @ self.b_down.t()
        alpha = torch.sigmoid(torch.cat([a, b], -1) @ self.fuse.t())
        return xh + alpha * a + (1 - alpha) * b


class Model(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.embed = torch.nn.Parameter(torch.empty(a.vocab, a.d))
        torch.nn.init.normal_(self.embed, 0.0, a.init_std)
        std_out = a.init_std / math.sqrt(2.0 * a.layers)
        self.layers = torch.nn.ModuleList([Layer(a, std_out) for _ in range(a.layers)])
        self.final_norm = Norm(a.d, a.eps)
        cos, sin = srpe_tables(a.seq_len, a.d // a.heads)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        L = a.layers
        self.atm_layers = set(range(L // 3, 2 * L // 3)) if a.atm == "causal" else set()

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.embed[tokens]
        counts = torch.arange(1, T + 1, dtype=x.dtype)[None, :, None]
        summaries = []
        for l, layer in enumerate(self.layers):
            summaries.append(torch.cumsum(x, dim=1) / counts)  # s_l, the prefix mean of X_l
            ctx = summaries[max(0, l - 1):l + 1]
            x = layer(x, ctx, self.cos, self.sin, l in self.atm_layers, self.a.tau)
        logits = self.final_norm(x) @ self.embed.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--dsff-a", type=int, default=256)
    p.add_argument("--dsff-b", type=int, default=1024)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--atm", choices=["off", "causal"], default="off")
    p.add_argument("--tau", type=float, default=0.92)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--init-std", type=float, default=0.02)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    model = Model(a)
    decay = [p_ for n, p_ in model.named_parameters() if p_.dim() == 2]
    no_decay = [p_ for n, p_ in model.named_parameters() if p_.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(a.seed)
    tokens = torch.randint(0, a.vocab, (a.micro_batch, a.seq_len + 1), generator=g)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step():
        opt.zero_grad(set_to_none=False)
        loss = model(inputs, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    seconds = time.perf_counter() - t0
    tokens_per_s = a.micro_batch * a.seq_len * a.steps / seconds
    print(f"torch tokens/s {tokens_per_s:.1f} step_ms {1e3 * seconds / a.steps:.2f} "
          f"threads {torch.get_num_threads()} loss {loss:.4f} torch {torch.__version__}")


if __name__ == "__main__":
    main()
