"""One training step of a PyTorch peer, run eagerly or replayed as a CUDA graph.

PyTorch's whole-network capture: warm the step up on a side stream, capture it once on
static input tensors, then each call copies the batch into them and replays the graph
(the optimizer must be built with capturable=True, gradients zeroed without set_to_none).
Shared by pytorch_train.py and pytorch_har.py (--graphs).
"""
import torch


def step_runner(train_step, x, y, batch, graphs):
    """Returns run(xb, yb) -> loss tensor: train_step itself, or its captured graph."""
    if not graphs:
        return train_step
    static_x, static_y = x[:batch].clone(), y[:batch].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train_step(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = train_step(static_x, static_y)

    def replay(xb, yb):
        static_x.copy_(xb)
        static_y.copy_(yb)
        graph.replay()
        return static_loss

    return replay
