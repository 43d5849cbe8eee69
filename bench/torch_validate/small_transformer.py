import torch.nn as nn


class Small(nn.Module):
    """A small transformer language model: embedding, 4 encoder layers,
    a head; token inputs."""

    def __init__(self, vocab=8000, d=256, layers=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.enc(self.emb(x)))


def small():
    return Small()
