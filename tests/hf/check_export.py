#!/usr/bin/python3
# Loads a wiola Hugging Face export through its own modeling_wiola.py (plain
# PyTorch, no transformers) and compares its logits on the given tokens with
# wiola-dump's on the same weights.
#   check_export.py EXPORT_DIR TOKENS.txt LOGITS.bin B T [--tolerance 1e-4]
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
a = ap.parse_args()

spec = importlib.util.spec_from_file_location("modeling_wiola", os.path.join(a.export, "modeling_wiola.py"))
mw = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mw)

torch.set_num_threads(1)
model = mw.load(a.export)
rows = [[int(t) for t in line.split()] for line in open(a.tokens) if line.strip()]
ids = torch.tensor([r[: a.T] for r in rows], dtype=torch.long)
assert ids.shape == (a.B, a.T), ids.shape
with torch.no_grad():
    ours = model(ids).logits.double()
V = ours.shape[-1]
raw = open(a.logits, "rb").read()
dump = torch.frombuffer(bytearray(raw), dtype=torch.float32).double().reshape(a.B, a.T, V)
diff = (ours - dump).abs().max().item()
scale = dump.abs().max().item()
rel = diff / scale
print("%s: logits [%d, %d, %d] through modeling_wiola.py vs wiola-dump: max |diff| %.3e, "
      "max |logit| %.3f, relative %.3e (tolerance %.0e)" % (a.label, a.B, a.T, V, diff, scale, rel, a.tolerance))
# Same next-token choices, too.
agree = (ours.argmax(-1) == dump.argmax(-1)).double().mean().item()
print("%s: argmax agreement %.4f" % (a.label, agree))
sys.exit(0 if rel <= a.tolerance else 1)
