# Everyday tensor manipulation: factories, views, broadcasting, reductions, indexing.
import json

import nn as torch

a = torch.arange(12, dtype=torch.float32).view(3, 4)
b = a.permute(1, 0).contiguous()
c = a @ b
d = torch.cat([a, a * 2], dim=0)
e = torch.stack([a[0], a[2]], dim=1)
values, indices = torch.max(a, dim=1)
mask = a > 5
f = a.masked_fill(mask, -1.0)
g = torch.where(a > 3, a, torch.zeros_like(a))
h = a.unsqueeze(0).expand(2, 3, 4).sum(dim=(0, 2))
i = a[torch.tensor([2, 0]), 1:3]
print("RESULT", json.dumps({"exact": {
    "c": c.tolist(), "d": d.shape[0], "e": e.tolist(), "max": values.tolist(),
    "argmax": indices.tolist(), "f": f.tolist(), "g": g.sum().item(), "h": h.tolist(),
    "i": i.tolist(), "mean": a.mean().item(), "std": round(a.std().item(), 5),
    "numel": a.numel(), "size": list(a.size()), "dtype": str(a.dtype).split(".")[-1],
    "t": a.t().stride(), "is_contig": a.t().is_contiguous()}}))
