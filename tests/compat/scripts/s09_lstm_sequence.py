# A sequence classifier: Embedding -> LSTM (batch_first) -> Linear, clip_grad_norm_.
import json

import nn as torch


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, 8)
        self.lstm = torch.nn.LSTM(8, 12, batch_first=True)
        self.head = torch.nn.Linear(12, 2)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


torch.manual_seed(0)
tokens = torch.randint(0, 6, (24, 5))
labels = (tokens[:, -1] >= 3).long()          # the class is in the last token
model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=0.05)
first = None
for step in range(40):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    first = loss.item() if first is None else first
accuracy = (model(tokens).argmax(1) == labels).float().mean().item()
assert loss.item() < first and accuracy >= 0.9, (first, loss.item(), accuracy)
out, (h, c) = model.lstm(model.embed(tokens))
print("RESULT", json.dumps({"exact": {"out": list(out.shape), "h": list(h.shape),
                                      "c": list(c.shape)}}))
