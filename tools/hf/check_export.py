#!/usr/bin/python3
# Loads a wiola Hugging Face export and compares its logits on the given
# tokens with wiola-dump's on the same weights. tests/hf/export_check.sh and
# tools/gpu-check.sh (call 2) run it.
#   check_export.py EXPORT_DIR TOKENS.txt LOGITS.bin B T [--tolerance 1e-4]
#                   [--loader plain|auto] [--device cpu|cuda]
# --loader plain (the default): the export's own modeling_wiola.py as plain
# PyTorch, no transformers. --loader auto: transformers'
# AutoModelForCausalLM.from_pretrained(EXPORT_DIR, trust_remote_code=True)
# when transformers is importable, else the plain path, and the output says
# which ran. --device: where the model computes (fp32; TF32 stays off).
# TOKENS.txt: B rows of T+1 ids (wiola-dump's input; the model reads the
# first T). LOGITS.bin: wiola-dump's `logits` [B, T, V] as little-endian fp32.
# Exit 0 when max |ours - dump| / max |dump| <= tolerance; 77 when torch is missing.
import argparse
import importlib.util
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: /usr/bin/python3 has no torch (tools/install-deps.sh installs python3-torch)")
    sys.exit(77)

ap = argparse.ArgumentParser()
ap.add_argument("export")
ap.add_argument("tokens")
ap.add_argument("logits")
ap.add_argument("B", type=int)
ap.add_argument("T", type=int)
ap.add_argument("--tolerance", type=float, default=1e-4)
ap.add_argument("--label", default="fp32")
ap.add_argument("--loader", choices=["plain", "auto"], default="plain")
ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
a = ap.parse_args()


def load_plain(export):
    spec = importlib.util.spec_from_file_location("modeling_wiola", os.path.join(export, "modeling_wiola.py"))
    mw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mw)
    return mw.load(export), "modeling_wiola.load (plain PyTorch)"


def load_auto(export):
    try:
        import transformers
    except ImportError:
        model, how = load_plain(export)
        return model, how + ", since transformers is not importable here"
    from transformers import AutoModelForCausalLM
    # No dtype argument (its name changed across versions): fp32 after loading.
    model = AutoModelForCausalLM.from_pretrained(export, trust_remote_code=True)
    return model.float().eval(), "transformers %s AutoModelForCausalLM (trust_remote_code, %s)" % (
        transformers.__version__, type(model).__name__)


torch.set_num_threads(1)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
if a.device == "cuda" and not torch.cuda.is_available():
    print("FAIL: --device cuda, but torch %s sees no CUDA device" % torch.__version__)
    sys.exit(2)
model, how = (load_auto if a.loader == "auto" else load_plain)(a.export)
model = model.to(a.device)
print("%s: loaded through %s on %s" % (a.label, how, a.device))
rows = [[int(t) for t in line.split()] for line in open(a.tokens) if line.strip()]
ids = torch.tensor([r[: a.T] for r in rows], dtype=torch.long)
assert ids.shape == (a.B, a.T), ids.shape
with torch.no_grad():
    ours = model(ids.to(a.device)).logits.double().cpu()
V = ours.shape[-1]
raw = open(a.logits, "rb").read()
dump = torch.frombuffer(bytearray(raw), dtype=torch.float32).double().reshape(a.B, a.T, V)
diff = (ours - dump).abs().max().item()
scale = dump.abs().max().item()
rel = diff / scale
print("%s: logits [%d, %d, %d] of the export vs wiola-dump: max |diff| %.3e, "
      "max |logit| %.3f, relative %.3e (tolerance %.0e)" % (a.label, a.B, a.T, V, diff, scale, rel, a.tolerance))
# Same next-token choices, too.
agree = (ours.argmax(-1) == dump.argmax(-1)).double().mean().item()
print("%s: argmax agreement %.4f" % (a.label, agree))
sys.exit(0 if rel <= a.tolerance else 1)
