"""Small modules for the herd_torch tests (importable as a module spec,
e.g. 'nets:mlp', with python/tests on PYTHONPATH)."""

import torch.nn as nn


def mlp(layers=6, width=256):
    """A sequential net: its gradients are ready last layer first."""
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*mods)


class TiedLM(nn.Module):
    """Tied input/output embedding, a frozen layer, a module used twice
    and a buffer: the cases where DDP's parameter list differs from
    module.parameters() order or content."""

    def __init__(self, vocab=500, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.frozen = nn.Linear(dim, dim)
        self.frozen.weight.requires_grad_(False)
        self.block = nn.Sequential(nn.Linear(dim, dim), nn.LayerNorm(dim))
        self.again = self.block  # the same module reached twice
        self.norm = nn.BatchNorm1d(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, ids):
        h = self.frozen(self.embed(ids))
        h = self.again(self.block(h))
        h = self.norm(h.transpose(1, 2)).transpose(1, 2)
        return self.head(h)


def tied_lm():
    return TiedLM()
