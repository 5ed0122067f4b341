# coding=utf-8
# Wiola language model in plain PyTorch, shipped with every Hugging Face export
# of wiola (`wiola-reshard export-safetensors`). It follows the model contract
# (SPEC.md of the wiola project) in inference mode:
#
#   X~  = WRMSNorm(X; attn_norm)            z = x + delta, y = gamma * z / sqrt(mean(z^2) + eps)
#   A   = GCLA(X~, C_l)                      causal self-attention over SRPE-rotated Q, K
#                                            (rotate-half pairs (j, j + dh/2)), blended with an
#                                            attention over the layer's context summaries
#   X'  = X + A;  X' += DSFF(WRMSNorm(X'; ffn_norm))
#   logits = WRMSNorm(X_L; final_norm) . embed.weight^T     (tied embedding)
#
# Query head h uses key/value group h mod Hkv. Layer l's context is the
# summaries of X_{l-1} and X_l (the Lambda most recent of X_0..X_l): the prefix
# mean per position ("causal") or the mean over the whole sequence
# ("sequence", the paper-literal mode that lets positions see later tokens).
# ATM (token merging) is a training-time device and is off here, as in
# wiola-dump without --train.
#
# Use without transformers:
#     import modeling_wiola
#     model = modeling_wiola.load("export_dir")           # fp32, eval mode
#     logits = model(torch.tensor([[1, 2, 3]])).logits     # [B, T, vocab]
# With transformers installed, the export's config.json `auto_map` makes
#     AutoModelForCausalLM.from_pretrained("export_dir", trust_remote_code=True)
# build the same model (WiolaForCausalLM subclasses PreTrainedModel then).
#
# Needs only torch (Debian's python3-torch 1.13 works); safetensors files are
# read by the small reader below, since Debian has no safetensors package.

import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

try:  # Hugging Face integration when transformers is importable
    from transformers import PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import CausalLMOutput

    HAVE_TRANSFORMERS = True
except Exception:  # plain PyTorch
    HAVE_TRANSFORMERS = False

    class PretrainedConfig:
        model_type = ""

        def __init__(self, **kwargs):
            for key, value in kwargs.items():
                setattr(self, key, value)

        def to_dict(self):
            return dict(self.__dict__)

    class PreTrainedModel(nn.Module):
        config_class = None

        def __init__(self, config, *args, **kwargs):
            super().__init__()
            self.config = config

        def post_init(self):
            pass

    class CausalLMOutput:
        def __init__(self, loss=None, logits=None):
            self.loss = loss
            self.logits = logits

        def __getitem__(self, i):
            return (self.loss, self.logits)[i] if self.loss is not None else (self.logits,)[i]


# --------------------------------------------------------------------------
# safetensors: an 8-byte little-endian header length, a JSON header (dtype,
# shape, data_offsets per tensor), then the raw little-endian data.

_ST_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
}


def read_safetensors(path):
    """Every tensor of a .safetensors file, by name (CPU tensors, stored dtype)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("%s: header length %d does not fit the file" % (path, n))
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError("%s: tensor %s has unsupported dtype %s" % (path, name, info["dtype"]))
        begin, end = info["data_offsets"]
        shape = list(info["shape"])
        count = 1
        for s in shape:
            count *= s
        raw = bytes(body[begin:end])
        if count == 0:
            t = torch.zeros(shape, dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape)
        out[name] = t
    return out


# --------------------------------------------------------------------------
# Configuration: the export's config.json (standard Hugging Face keys, the
# Wiola-only fields under their own names).

_DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "dsff_narrow_intermediate_size": 768,
    "dsff_wide_intermediate_size": 3072,
    "vocab_size": 32000,
    "max_position_embeddings": 2048,
    "rope_theta": 10000.0,
    "k_s": 8.0,
    "a_s": 0.1,
    "f_s": 0.01,
    "tau": 0.92,
    "Lambda": 2,
    "rms_norm_eps": 1e-6,
    "summary": "causal",
    "atm": "causal",
    "tie_word_embeddings": True,
}

# config.json files written before the standard names: the wiola file keys.
_OLD_KEYS = {
    "d": "hidden_size",
    "L": "num_hidden_layers",
    "H": "num_attention_heads",
    "Hkv": "num_key_value_heads",
    "dA": "dsff_narrow_intermediate_size",
    "dB": "dsff_wide_intermediate_size",
    "V": "vocab_size",
    "T": "max_position_embeddings",
    "theta0": "rope_theta",
    "eps": "rms_norm_eps",
}


class WiolaConfig(PretrainedConfig):
    model_type = "wiola"

    def __init__(self, **kwargs):
        arch = kwargs.get("arch", "wiola")
        if arch != "wiola":
            raise NotImplementedError(
                "config.json has arch %r: this file implements the main Wiola family only (a Wiola "
                "13M export carries its weights and config.json, but no PyTorch model yet)" % arch)
        for old, new in _OLD_KEYS.items():
            if old in kwargs and new not in kwargs:
                kwargs[new] = kwargs.pop(old)
        for key, value in _DEFAULTS.items():
            kwargs.setdefault(key, value)
        for key in _DEFAULTS:
            setattr(self, key, kwargs.pop(key))
        super().__init__(**kwargs)
        self.head_dim = self.hidden_size // self.num_attention_heads
        if self.head_dim * self.num_attention_heads != self.hidden_size:
            raise ValueError("hidden_size must be a multiple of num_attention_heads")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_key_value_heads must divide num_attention_heads")
        if self.summary not in ("causal", "sequence"):
            raise ValueError("summary must be causal or sequence, got %r" % self.summary)

    @classmethod
    def from_json_file(cls, path):
        with open(path, "r", encoding="utf-8") as f:
            return cls(**json.load(f))


# --------------------------------------------------------------------------
# The model. Module and parameter names are the canonical names of the
# checkpoints (embed.weight, layers.{i}.attn.q_proj.weight, ...), so the
# state dict is the safetensors file as it is.


class WRMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(d))
        self.delta = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        z = x + self.delta
        return self.gamma * z * torch.rsqrt(z.pow(2).mean(-1, keepdim=True) + self.eps)


def _linear(n_in, n_out):
    return nn.Linear(n_in, n_out, bias=False)


def srpe_tables(config, positions, device=None):
    """c = r cos(theta), s = r sin(theta) per position and pair, [T, dh/2], in float64."""
    half = config.head_dim // 2
    j = torch.arange(half, dtype=torch.float64, device=device)
    omega = torch.pow(torch.tensor(config.rope_theta, dtype=torch.float64), -2.0 * j / config.head_dim)
    p = torch.arange(positions, dtype=torch.float64, device=device)[:, None]
    angle = p * omega * (1.0 + 1.0 / config.k_s)
    radius = 1.0 + config.a_s * torch.sin(p * config.f_s * omega)
    return radius * torch.cos(angle), radius * torch.sin(angle)


def srpe(x, cos, sin):
    """Rotate-half SRPE on [B, T, heads, dh] with tables [T, dh/2]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c = cos[:, None, :].to(x.dtype)
    s = sin[:, None, :].to(x.dtype)
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)


class WiolaAttention(nn.Module):
    """GCLA: causal self-attention blended (beta = sigmoid(ctx_logit)) with an
    attention over the context summaries, gated by sigmoid(gate_proj(x))."""

    def __init__(self, config):
        super().__init__()
        d, H, Hkv, dh = (config.hidden_size, config.num_attention_heads,
                         config.num_key_value_heads, config.head_dim)
        self.H, self.Hkv, self.dh = H, Hkv, dh
        self.q_proj = _linear(d, H * dh)
        self.k_proj = _linear(d, Hkv * dh)
        self.v_proj = _linear(d, Hkv * dh)
        self.ctx_k_proj = _linear(d, Hkv * dh)
        self.ctx_v_proj = _linear(d, Hkv * dh)
        self.gate_proj = _linear(d, H * dh)
        self.o_proj = _linear(H * dh, d)
        self.ctx_logit = nn.Parameter(torch.full((1,), -3.0))
        # Query head h reads key/value group h mod Hkv (the paper's mapping).
        self.register_buffer("group", torch.arange(H) % Hkv, persistent=False)

    def _heads(self, t, heads):
        return t.view(t.shape[0], t.shape[1], heads, self.dh)

    def forward(self, x, context, cos, sin):
        B, T, _ = x.shape
        scale = 1.0 / math.sqrt(self.dh)
        q = srpe(self._heads(self.q_proj(x), self.H), cos, sin)          # [B, T, H, dh]
        k = srpe(self._heads(self.k_proj(x), self.Hkv), cos, sin)[:, :, self.group]
        v = self._heads(self.v_proj(x), self.Hkv)[:, :, self.group]
        scores = torch.einsum("bthd,bshd->bhts", q, k) * scale
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        o_self = torch.einsum("bhts,bshd->bthd", torch.softmax(scores, dim=-1), v)
        # Context: per position, one key and value per summary (no SRPE on them).
        ck = [self._heads(self.ctx_k_proj(s), self.Hkv)[:, :, self.group] for s in context]
        cv = [self._heads(self.ctx_v_proj(s), self.Hkv)[:, :, self.group] for s in context]
        ctx_scores = torch.stack([(q * k_c).sum(-1) for k_c in ck], dim=-1) * scale  # [B, T, H, C]
        p = torch.softmax(ctx_scores, dim=-1)
        o_ctx = sum(p[..., c : c + 1] * cv[c] for c in range(len(cv)))
        beta = torch.sigmoid(self.ctx_logit)
        o = (1 - beta) * o_self + beta * o_ctx
        gate = torch.sigmoid(self.gate_proj(x))
        return self.o_proj(gate * o.reshape(B, T, self.H * self.dh))


class WiolaDSFF(nn.Module):
    """a = D_A(SiLU(G_A x) * U_A x), b = D_B(GELU(U_B x)) (exact GELU),
    alpha = sigmoid(W_f [a; b]), out = alpha * a + (1 - alpha) * b."""

    def __init__(self, config):
        super().__init__()
        d, dA, dB = (config.hidden_size, config.dsff_narrow_intermediate_size,
                     config.dsff_wide_intermediate_size)
        self.a_gate = _linear(d, dA)
        self.a_up = _linear(d, dA)
        self.a_down = _linear(dA, d)
        self.b_up = _linear(d, dB)
        self.b_down = _linear(dB, d)
        self.fuse = _linear(2 * d, d)

    def forward(self, x):
        a = self.a_down(F.silu(self.a_gate(x)) * self.a_up(x))
        b = self.b_down(F.gelu(self.b_up(x)))
        alpha = torch.sigmoid(self.fuse(torch.cat([a, b], dim=-1)))
        return alpha * a + (1 - alpha) * b


class WiolaLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn_norm = WRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.attn = WiolaAttention(config)
        self.ffn_norm = WRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.ffn = WiolaDSFF(config)

    def forward(self, x, context, cos, sin):
        x = x + self.attn(self.attn_norm(x), context, cos, sin)
        return x + self.ffn(self.ffn_norm(x))


def summarize(x, mode):
    """Summary of a layer input [B, T, d]: prefix means (causal) or the sequence mean."""
    if mode == "sequence":
        return x.mean(dim=1, keepdim=True).expand_as(x)
    count = torch.arange(1, x.shape[1] + 1, dtype=x.dtype, device=x.device)[None, :, None]
    return torch.cumsum(x, dim=1) / count


class WiolaForCausalLM(PreTrainedModel):
    config_class = WiolaConfig
    base_model_prefix = ""
    _tied_weights_keys = []

    def __init__(self, config):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(WiolaLayer(config) for _ in range(config.num_hidden_layers))
        self.final_norm = WRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_init()

    def _init_weights(self, module):  # transformers calls it for fresh models
        std = getattr(self.config, "initializer_range", 0.02)
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(0.0, std)

    def get_input_embeddings(self):
        return self.embed

    def set_input_embeddings(self, value):
        self.embed = value

    def forward(self, input_ids, labels=None, **kwargs):
        config = self.config
        B, T = input_ids.shape
        if T > config.max_position_embeddings:
            raise ValueError("%d tokens exceed the context of %d" % (T, config.max_position_embeddings))
        cos, sin = srpe_tables(config, T, device=input_ids.device)
        x = self.embed(input_ids)
        summaries = []
        for index, layer in enumerate(self.layers):
            summaries.append(summarize(x, config.summary))  # of X_index, the layer's input
            first = max(0, index - config.Lambda + 1)
            x = layer(x, summaries[first : index + 1], cos, sin)
        logits = F.linear(self.final_norm(x), self.embed.weight)
        loss = None
        if labels is not None:  # labels are the inputs: predict token t+1 from t
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                   labels[:, 1:].reshape(-1))
        return CausalLMOutput(loss=loss, logits=logits)

    @classmethod
    def from_wiola_export(cls, directory, dtype=torch.float32):
        """The model of an export folder without transformers: config.json and
        model.safetensors (any stored dtype), computing in `dtype`."""
        config = WiolaConfig.from_json_file(os.path.join(directory, "config.json"))
        model = cls(config)
        state = read_safetensors(os.path.join(directory, "model.safetensors"))
        state = {name: t.to(dtype) for name, t in state.items()}
        model.load_state_dict(state, strict=True)
        return model.to(dtype).eval()


def load(directory, dtype=torch.float32):
    """WiolaForCausalLM of an export folder, in eval mode."""
    return WiolaForCausalLM.from_wiola_export(directory, dtype)


if HAVE_TRANSFORMERS:
    try:
        from transformers import AutoConfig, AutoModelForCausalLM

        AutoConfig.register("wiola", WiolaConfig)
        AutoModelForCausalLM.register(WiolaConfig, WiolaForCausalLM)
    except Exception:  # already registered, or an older transformers
        pass
