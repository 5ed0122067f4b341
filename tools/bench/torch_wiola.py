#!/usr/bin/python3
"""A plain PyTorch implementation of the Wiola model (../shared/SPEC.md,
"The layer"), for tools/bench-vs-torch.sh (CPU, eager, fp32) and
tools/gpu-check.sh (CUDA, bf16, eager and torch.compile): the same shapes, the
same AdamW and clipping as wiola-train, timed over training steps on random
tokens.

It is a benchmark, not a reference: nothing in wiola's tests depends on it.
On the CPU it runs on Debian's python3-torch (1.13) for /usr/bin/python3
(apt-get install python3-torch); on a GPU machine on its PyTorch 2.x.

    /usr/bin/python3 tools/bench/torch_wiola.py --d 256 --layers 4 --heads 4 \
        --kv-heads 2 --dsff-a 256 --dsff-b 1024 --seq-len 256 --vocab 2048 \
        --micro-batch 4 --atm causal --threads 2 --steps 10 --warmup 2
    python3 tools/bench/torch_wiola.py --device cuda --dtype bf16 --compile ...
    python3 tools/bench/torch_wiola.py --device cuda --ceilings

Prints one line: "torch tokens/s <x> step_ms <y> ..." (then the device, dtype,
mode, attention kernel and peak memory). --ceilings prints instead the
device's measured bf16 matrix-product rate, copy bandwidth, causal attention
rate (PyTorch's fused kernel) and the gap one more kernel adds: the ceilings
tools/gpu-check.sh states MFU against and wiola-profile --project prices
counted work at.

--dtype bf16 is PyTorch's mixed precision (torch.autocast to bfloat16 over
fp32 parameters, gradients and AdamW state), the counterpart of wiola's bf16
(bf16 weights and activations, fp32 master weights and statistics).
--attention fused computes the self-attention with
F.scaled_dot_product_attention (PyTorch's fused kernels: flash attention for
the causal layers, a masked kernel for ATM's visibility mask); explicit (the
default on the CPU) with a masked softmax over T x T. --compile wraps the
model in torch.compile; its compilation happens in the warm-up steps.

What it mirrors: WRMSNorm, SRPE (rotate-half pairs, coefficients in double),
GCLA with key/value group h % Hkv, causal prefix-mean summaries of X_{l-1}
and X_l as the context, the β-blend, the σ gate, DSFF (SiLU product, exact
GELU, σ fusion), the tied head and mean cross-entropy, AdamW (β 0.9/0.95,
weight decay 0.1 on matrices and the embedding) after global-norm clipping
to 1.0. Causal ATM (--atm causal) runs in layers [L/3, 2L/3): the greedy
adjacent merge on cos(X̃[t], X̃[t+1]) > τ, keys/values of the merged groups
followed by the pairs' unmerged first members, and a visibility mask (the
merge itself is a host loop over T per sequence, as the decision at t
depends on the one before).
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

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")  # PyTorch >= 2.0


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


def atm_plan(rho, tau, device):
    """One sequence's merge plan: the two source rows of each key/value row
    (groups, then the pairs' unmerged first members), its position, and the
    visibility mask [T, T] (True: query t sees key row j)."""
    T = len(rho)
    first, second, group_of = greedy_merge(rho, tau)
    G = len(first)
    pairs = [f for f, s_ in zip(first, second) if s_ >= 0]
    a_rows = first + pairs
    b_rows = [s_ if s_ >= 0 else f for f, s_ in zip(first, second)] + pairs
    extra = [-1] * T  # the key row of a pair's unmerged first member
    for k, f in enumerate(pairs):
        extra[f] = G + k
    group = torch.tensor(group_of, device=device)
    pair_first = torch.tensor(extra, device=device) >= 0
    # A pair's first member sees the groups before its own and its own row;
    # every other query the groups up to its own.
    limit = group + (~pair_first).long()
    j = torch.arange(T, device=device)[None, :]
    vis = (j < limit[:, None]) | (j == torch.tensor(extra, device=device)[:, None])
    return a_rows, b_rows, first + pairs, vis


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
        self.register_buffer("group", torch.tensor([h % Hkv for h in range(H)]), persistent=False)
        self.fused = a.attention == "fused"

    def heads(self, x, n):
        B, T, _ = x.shape
        return x.view(B, T, n, self.dh)

    def attention(self, xn, ctx, cos, sin, atm, tau):
        B, T, _ = xn.shape
        H, dh = self.H, self.dh
        scale = 1.0 / math.sqrt(dh)
        q = srpe(self.heads(xn @ self.wq.t(), H), cos, sin)
        dev = xn.device
        if atm:
            # The merge decision (no gradient), then key/value rows: groups,
            # then the unmerged first members of pairs.
            with torch.no_grad():
                rho = F.cosine_similarity(xn[:, :-1].float(), xn[:, 1:].float(), dim=-1).tolist()
            src_a, src_b, pos_kv, masks = [], [], [], []
            for bi in range(B):
                a_rows, b_rows, pos, vis = atm_plan(rho[bi] + [-2.0], tau, dev)
                src_a += [r + bi * T for r in a_rows]
                src_b += [r + bi * T for r in b_rows]
                pos_kv.append(pos)
                masks.append(vis)
            flat = xn.reshape(B * T, -1)
            src_a, src_b = torch.tensor(src_a, device=dev), torch.tensor(src_b, device=dev)
            xkv = (0.5 * (flat[src_a] + flat[src_b])).view(B, T, -1)
            pos_kv = torch.tensor(pos_kv, device=dev)
            k = srpe(self.heads(xkv @ self.wk.t(), self.Hkv), cos[pos_kv], sin[pos_kv])
            v = self.heads(xkv @ self.wv.t(), self.Hkv)
            mask = torch.stack(masks)[:, None]
        else:
            k = srpe(self.heads(xn @ self.wk.t(), self.Hkv), cos, sin)
            v = self.heads(xn @ self.wv.t(), self.Hkv)
            mask = None  # causal
        qh = q.transpose(1, 2)                                   # [B, H, T, dh]
        kh = k[:, :, self.group].transpose(1, 2)
        vh = v[:, :, self.group].transpose(1, 2)
        if self.fused:
            o_self = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=mask, is_causal=mask is None)
        else:
            if mask is None:
                mask = torch.ones(T, T, dtype=torch.bool, device=dev).tril()[None, None]
            s = (qh @ kh.transpose(-1, -2)) * scale
            s = s.masked_fill(~mask, float("-inf"))
            o_self = torch.softmax(s, dim=-1) @ vh
        o_self = o_self.transpose(1, 2)                          # [B, T, H, dh]
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
        counts = torch.arange(1, T + 1, dtype=x.dtype, device=x.device)[None, :, None]
        summaries = []
        for l, layer in enumerate(self.layers):
            summaries.append(torch.cumsum(x, dim=1) / counts)  # s_l, the prefix mean of X_l
            ctx = summaries[max(0, l - 1):l + 1]
            x = layer(x, ctx, self.cos, self.sin, l in self.atm_layers, self.a.tau)
        logits = self.final_norm(x) @ self.embed.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device, fn, warmup, reps):
    """Seconds per call of fn, the mean of reps calls after warmup ones."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    synchronize(device)
    return (time.perf_counter() - t0) / reps


def ceilings(a, device):
    """The measured ceilings: a bf16 matrix product on random data and a
    device-to-device copy (bytes read plus bytes written)."""
    n = a.gemm_n
    x = torch.randn(n, n, device=device).to(torch.bfloat16)
    y = torch.randn(n, n, device=device).to(torch.bfloat16)
    z = torch.empty(n, n, device=device, dtype=torch.bfloat16)
    seconds = timed(device, lambda: torch.matmul(x, y, out=z), 3, 10)
    print(f"torch ceiling bf16-matmul TFLOP/s {2.0 * n ** 3 / seconds / 1e12:.4g} "
          f"({n}^3 torch.matmul on random data, mean of 10 after 3 warm-ups)")
    del x, y, z
    count = a.copy_mib * (1 << 20) // 4
    src = torch.rand(count, device=device)
    dst = torch.empty_like(src)
    seconds = timed(device, lambda: dst.copy_(src), 3, 10)
    print(f"torch ceiling copy GB/s {2.0 * 4 * count / seconds / 1e9:.1f} "
          f"({a.copy_mib} MiB copy_ on {device.type}, read + written, mean of 10 after 3 warm-ups)")
    del src, dst
    # Never run on a GPU before: a failure here says so and keeps the two
    # rates above, which tools/gpu-check.sh reads first.
    for name, measure in (("attention", lambda: attention_ceiling(a, device)),
                          ("launch", lambda: launch_ceiling(device))):
        try:
            measure()
        except Exception as e:  # noqa: BLE001 - any failure is reported, not raised
            print(f"torch ceiling {name}: not measured ({type(e).__name__}: {e})")


def attention_ceiling(a, device):
    """Causal bf16 attention, forward and backward, through PyTorch's fused
    kernel (FlashAttention-2 on CUDA). FLOPs as FlashAttention counts them:
    the causal half of 4 T^2 dh per head forward, 2.5 times that backward."""
    if not HAVE_SDPA:
        print("torch ceiling attention: not measured (this PyTorch has no "
              "scaled_dot_product_attention)")
        return
    b, h, t, dh = a.attn_batch, a.attn_heads, a.attn_seq, a.attn_head_dim
    shape = (b, h, t, dh)
    q, k, v = (torch.randn(shape, device=device, dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    grad = torch.randn(shape, device=device, dtype=torch.bfloat16)

    def step():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(grad)

    seconds = timed(device, step, 2, 5)
    flops = 3.5 * 4.0 * b * h * t * t * dh / 2
    print(f"torch ceiling attention TFLOP/s {flops / seconds / 1e12:.4g} "
          f"(scaled_dot_product_attention, causal, forward + backward, {b} x {h} heads x {t} "
          f"x {dh}, mean of 5 after 2 warm-ups)")


def launch_ceiling(device):
    """The time one more tiny kernel adds to a stream: on CUDA 1,000 of them
    captured in a CUDA graph and replayed (the device's gap between kernels,
    without the host's launch cost); on the CPU one tiny PyTorch op."""
    x = torch.zeros(1, device=device)
    n = 1000

    def kernels():
        for _ in range(n):
            x.add_(1)

    how = "1,000 one-element add_ in a CUDA graph, replayed"
    run = kernels
    if device.type == "cuda":
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            kernels()  # warm up outside the capture, as CUDA graphs ask
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            kernels()
        run = graph.replay
    else:
        how = "1,000 one-element add_ on the CPU, eager"
    seconds = timed(device, run, 2, 10)
    print(f"torch ceiling launch us {seconds / n * 1e6:.3g} ({how}, mean of 10 after 2 warm-ups)")


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
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: autocast to bfloat16 over fp32 parameters and optimizer state")
    p.add_argument("--attention", choices=["explicit", "fused"], default=None,
                   help="self-attention as a masked softmax, or F.scaled_dot_product_attention "
                        "(default: fused on CUDA, explicit on the CPU)")
    p.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    p.add_argument("--ceilings", action="store_true",
                   help="print the measured bf16 matmul rate, copy bandwidth, causal attention "
                        "rate and gap per kernel instead")
    p.add_argument("--gemm-n", type=int, default=8192, help="--ceilings: the matmul's n (n^3)")
    p.add_argument("--copy-mib", type=int, default=4096, help="--ceilings: the bytes copied")
    p.add_argument("--attn-batch", type=int, default=4, help="--ceilings: attention's batch")
    p.add_argument("--attn-heads", type=int, default=16, help="--ceilings: attention's heads")
    p.add_argument("--attn-seq", type=int, default=2048, help="--ceilings: attention's length")
    p.add_argument("--attn-head-dim", type=int, default=128, help="--ceilings: attention's dh")
    a = p.parse_args()

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.stderr.write("torch_wiola.py: --device cuda, but this PyTorch (%s) sees no CUDA device\n"
                         % torch.__version__)
        sys.exit(2)
    device = torch.device(a.device)
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    if a.ceilings:
        ceilings(a, device)
        return
    if a.attention is None:
        a.attention = "fused" if a.device == "cuda" else "explicit"
    if a.attention == "fused" and not HAVE_SDPA:
        sys.stderr.write("torch_wiola.py: --attention fused needs F.scaled_dot_product_attention "
                         "(PyTorch >= 2.0); this is %s\n" % torch.__version__)
        sys.exit(2)
    if a.compile and not hasattr(torch, "compile"):
        sys.stderr.write("torch_wiola.py: --compile needs torch.compile (PyTorch >= 2.0); this is %s\n"
                         % torch.__version__)
        sys.exit(2)
    model = Model(a).to(device)
    decay = [p_ for n, p_ in model.named_parameters() if p_.dim() == 2]
    no_decay = [p_ for n, p_ in model.named_parameters() if p_.dim() != 2]
    # On CUDA the fused (single-kernel) AdamW where this PyTorch has it: the
    # fastest update PyTorch offers, as wiola's is one kernel too.
    fused_adam = {"fused": True} if a.device == "cuda" else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8, **fused_adam)
    g = torch.Generator().manual_seed(a.seed)
    tokens = torch.randint(0, a.vocab, (a.micro_batch, a.seq_len + 1), generator=g).to(device)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    forward = torch.compile(model) if a.compile else model
    autocast = torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=a.dtype == "bf16")

    def step():
        opt.zero_grad(set_to_none=False)
        with autocast:
            loss = forward(inputs, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    synchronize(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    synchronize(device)
    seconds = time.perf_counter() - t0
    tokens_per_s = a.micro_batch * a.seq_len * a.steps / seconds
    memory = (f"{torch.cuda.max_memory_allocated(device) / 2 ** 30:.2f}" if device.type == "cuda"
              else "n/a")
    print(f"torch tokens/s {tokens_per_s:.1f} step_ms {1e3 * seconds / a.steps:.2f} "
          f"threads {torch.get_num_threads()} loss {loss.item():.4f} torch {torch.__version__} "
          f"device {a.device} dtype {a.dtype} mode {'compile' if a.compile else 'eager'} "
          f"attention {a.attention} peak_mem_gib {memory}")


if __name__ == "__main__":
    main()
