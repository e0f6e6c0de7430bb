"""PyTorch Geometric peers: Cora GCN (GCNConv(cached=True)) and GAT (GATConv, 8 heads
x 8) steps and inference, the founding policy model's gradient, and the synthetic GCN
steps. Threads: torch.set_num_threads(T) (and OMP_NUM_THREADS)."""

import common


def setup(ctx):
    import torch
    import torch_geometric

    torch.set_num_threads(ctx.threads)
    ctx.version = f"torch_geometric {torch_geometric.__version__}, torch {torch.__version__}"
    ctx.mark_base()
    return torch


def cora_data(torch):
    src, dst, x, y, train = common.cora()
    edge_index = torch.from_numpy(common.np.stack([src, dst]))
    return edge_index, torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(train)


def train_and_infer(ctx, torch, model, opt, x, edge_index, y, train):
    F = torch.nn.functional

    def step():
        model.train()
        opt.zero_grad()
        out = model(x, edge_index)
        F.cross_entropy(out[train], y[train]).backward()
        opt.step()

    def infer():
        model.eval()
        with torch.no_grad():
            model(x, edge_index)

    ctx.measure("step", step)
    ctx.measure("infer", infer)


def cora_gcn(ctx):
    torch = setup(ctx)
    from torch_geometric.nn import GCNConv

    F = torch.nn.functional
    edge_index, x, y, train = cora_data(torch)

    class Gcn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GCNConv(x.shape[1], 16, cached=True)
            self.conv2 = GCNConv(16, 7, cached=True)

        def forward(self, x, ei):
            h = F.dropout(F.relu(self.conv1(x, ei)), 0.5, self.training)
            return self.conv2(h, ei)

    torch.manual_seed(0)
    model = Gcn()
    opt = torch.optim.Adam([
        dict(params=model.conv1.parameters(), weight_decay=5e-4),
        dict(params=model.conv2.parameters(), weight_decay=0.0),
    ], lr=0.01)
    train_and_infer(ctx, torch, model, opt, x, edge_index, y, train)


def cora_gat(ctx):
    torch = setup(ctx)
    from torch_geometric.nn import GATConv

    F = torch.nn.functional
    edge_index, x, y, train = cora_data(torch)

    class Gat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GATConv(x.shape[1], 8, heads=8, dropout=0.6)
            self.conv2 = GATConv(64, 7, heads=1, concat=False, dropout=0.6)

        def forward(self, x, ei):
            h = F.dropout(F.elu(self.conv1(x, ei)), 0.6, self.training)
            return self.conv2(h, ei)

    torch.manual_seed(0)
    model = Gat()
    opt = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    train_and_infer(ctx, torch, model, opt, x, edge_index, y, train)


def policy(ctx):
    torch = setup(ctx)
    from torch_geometric.nn import GCNConv

    src, dst = common.bernoulli_edges(100, 0.2, 1)
    ei = torch.from_numpy(common.np.stack([src, dst]))
    x = torch.from_numpy(common.dense_f32(100, 2, 2))
    torch.manual_seed(0)
    conv1, conv2 = GCNConv(2, 50, cached=True), GCNConv(50, 50, cached=True)
    out = torch.nn.Linear(50, 100)
    params = [*conv1.parameters(), *conv2.parameters(), *out.parameters()]

    def gradient():
        for p in params:
            p.grad = None
        h = torch.relu(conv2(torch.tanh(conv1(x, ei)), ei))
        torch.sigmoid(out(h)).mean().backward()

    ctx.measure("gradient", gradient)


def synth_gcn(nodes, edges):
    def run(ctx):
        torch = setup(ctx)
        from torch_geometric.nn import GCNConv

        F = torch.nn.functional
        src, dst = common.random_edges(nodes, edges, 11)
        ei = torch.from_numpy(common.np.stack([src, dst]))
        x = torch.from_numpy(common.dense_f32(nodes, 128, 12))
        y = torch.from_numpy((common.mix(13, common.np.arange(nodes)) % common.np.uint64(16)).astype("int64"))
        torch.manual_seed(0)
        conv1, conv2 = GCNConv(128, 64, cached=True), GCNConv(64, 16, cached=True)
        opt = torch.optim.Adam([*conv1.parameters(), *conv2.parameters()], lr=0.01)

        def step():
            opt.zero_grad()
            logits = conv2(F.relu(conv1(x, ei)), ei)
            F.cross_entropy(logits, y).backward()
            opt.step()

        ctx.measure("step", step, min_runs=3 if nodes < 500_000 else 2, min_seconds=0.0, warmup=1, memory=True)

    return run


WORKLOADS = {
    "cora_gcn": (["step", "infer"], cora_gcn),
    "cora_gat": (["step", "infer"], cora_gat),
    "policy": (["gradient"], policy),
    "synth_gcn_100k": (["step"], synth_gcn(100_000, 1_000_000)),
    "synth_gcn_1m": (["step"], synth_gcn(1_000_000, 10_000_000)),
}

if __name__ == "__main__":
    common.main("pyg", WORKLOADS)
