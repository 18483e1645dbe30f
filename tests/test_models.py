"""ampc.models: ResNet state_dict keys and shapes equal torchvision's (built here with torch.nn in
torchvision's layout, torch being the test oracle), forward shapes, training steps of each model,
the GPT's tied head and causality, and the pretrained=True error."""
import numpy as np
import pytest
import torch
import torch.nn as tnn

import ampc
import ampc.nn.functional as F
from ampc.models import GPT, MLP, GPTConfig, SmallCNN, resnet18, resnet34, resnet50


# ---- torchvision.models.resnet's layout, transcribed with torch.nn (torchvision is not installed)
class _TVBasic(tnn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(planes)
        self.relu = tnn.ReLU(inplace=True)
        self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(planes)
        self.downsample = downsample


class _TVBottleneck(tnn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = tnn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(planes)
        self.conv2 = tnn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(planes)
        self.conv3 = tnn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = tnn.BatchNorm2d(planes * 4)
        self.relu = tnn.ReLU(inplace=True)
        self.downsample = downsample


class _TVResNet(tnn.Module):
    def __init__(self, block, layers, num_classes=1000, in_channels=3):
        super().__init__()
        self.inplanes = 64
        self.conv1 = tnn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        self.bn1 = tnn.BatchNorm2d(64)
        self.relu = tnn.ReLU(inplace=True)
        self.maxpool = tnn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2)
        self.layer3 = self._make_layer(block, 256, layers[2], 2)
        self.layer4 = self._make_layer(block, 512, layers[3], 2)
        self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
        self.fc = tnn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = tnn.Sequential(tnn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                                        tnn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return tnn.Sequential(*layers)


def _layout(sd):
    return [(k, tuple(v.shape)) for k, v in sd.items()]


_BUILT = {}


def _ours(fn, **kw):
    """ampc models are built once per configuration: filling 25M weights takes seconds on a CPU."""
    key = (fn.__name__, tuple(sorted(kw.items())))
    if key not in _BUILT:
        _BUILT[key] = fn(**kw)
    return _BUILT[key]


def _theirs(block, layers, **kw):
    with torch.device("meta"):  # shapes only: no memory, no initialisation time
        return _TVResNet(block, layers, **kw)


@pytest.mark.parametrize("ours,block,layers", [(resnet18, _TVBasic, [2, 2, 2, 2]), (resnet34, _TVBasic, [3, 4, 6, 3]),
                                               (resnet50, _TVBottleneck, [3, 4, 6, 3])])
def test_resnet_state_dict_matches_torchvision_layout(ours, block, layers):
    kw = dict(num_classes=10, in_channels=1) if ours is resnet34 else {}  # resnet34: the small variant only (time)
    mine = _layout(_ours(ours, **kw).state_dict())
    theirs = _layout(_theirs(block, layers, **kw).state_dict())
    assert mine == theirs  # same keys, same order, same shapes
    assert sum(p.numel() for p in _ours(ours, **kw).parameters()) == sum(p.numel() for p in _theirs(block, layers, **kw).parameters())


def test_resnet_weights_load_from_a_torch_state_dict():
    tv = _TVResNet(_TVBasic, [2, 2, 2, 2], num_classes=10)
    sd = {k: ampc.from_numpy(v.detach().numpy().copy()) for k, v in tv.state_dict().items()}
    m = _ours(resnet18, num_classes=10)
    m.load_state_dict(sd)
    np.testing.assert_array_equal(m.layer3[1].conv2.weight.detach().numpy(), tv.layer3[1].conv2.weight.detach().numpy())


def test_resnet_small_input_stem_and_pretrained_error():
    m = _ours(resnet18, num_classes=10, in_channels=1, small_input=True)
    assert tuple(m.conv1.weight.shape) == (64, 1, 3, 3)
    assert [k for k, _ in _layout(m.state_dict())] == [k for k, _ in _layout(_theirs(_TVBasic, [2, 2, 2, 2]).state_dict())]
    ampc.manual_seed(0)
    out = m.eval()(ampc.randn(2, 1, 28, 28))
    assert tuple(out.shape) == (2, 10)
    with pytest.raises(RuntimeError, match="pretrained weights are not available"):
        resnet50(pretrained=True)
    with pytest.raises(RuntimeError, match="pretrained weights are not available"):
        resnet18(weights="IMAGENET1K_V1")


def test_resnet_init_matches_torchvision():
    m = _ours(resnet18)
    w = m.layer1[0].conv1.weight.detach().numpy()
    fan_out = 64 * 3 * 3
    assert abs(w.std() - np.sqrt(2.0 / fan_out)) < 0.1 * np.sqrt(2.0 / fan_out)
    assert np.all(m.bn1.weight.detach().numpy() == 1) and np.all(m.bn1.bias.detach().numpy() == 0)


def _train_steps(model, x, y, steps=4, lr=1e-2):
    opt = ampc.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_mlp_shapes_activations_and_training():
    ampc.manual_seed(0)
    m = MLP(12, [16, 8], 3, activation="gelu", dropout=0.1)
    assert [k for k in m.state_dict()] == ["net.0.weight", "net.0.bias", "net.3.weight", "net.3.bias",
                                           "net.6.weight", "net.6.bias"]
    x = ampc.randn(10, 3, 4)  # flattened to (10, 12)
    y = ampc.randint(0, 3, (10,))
    assert tuple(m(x).shape) == (10, 3)
    losses = _train_steps(m.eval(), x, y, steps=6)
    assert losses[-1] < losses[0]
    with pytest.raises(ValueError, match="unknown activation"):
        MLP(2, [2], 2, activation="swish2")


def test_small_cnn_shapes_and_training():
    ampc.manual_seed(0)
    m = SmallCNN()
    x = ampc.randn(8, 1, 28, 28)
    y = ampc.randint(0, 10, (8,))
    assert tuple(m(x).shape) == (8, 10)
    assert sum(p.numel() for p in m.parameters()) < 100_000
    losses = _train_steps(m, x, y, steps=5, lr=1e-3)
    assert losses[-1] < losses[0]
    assert tuple(SmallCNN(in_channels=3, num_classes=5, image_size=32)(ampc.randn(2, 3, 32, 32)).shape) == (2, 5)


def test_gpt_forward_loss_tied_head_and_causality():
    ampc.manual_seed(0)
    cfg = GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, n_embd=16)
    m = GPT(cfg).eval()
    assert m.transformer.wte.weight is m.lm_head.weight
    names = [n for n, _ in m.named_parameters()]
    assert "lm_head.weight" not in names or "transformer.wte.weight" not in names  # shared once
    idx = ampc.randint(0, 20, (3, 8))
    logits, loss = m(idx)
    assert tuple(logits.shape) == (3, 8, 20) and loss is None
    _, loss = m(idx, idx)
    assert abs(loss.item() - np.log(20)) < 0.5  # near-uniform at init (std 0.02)
    # position t's logits do not depend on tokens after t
    idx2 = idx.clone()
    idx2[:, 5:] = (idx2[:, 5:] + 1) % 20
    a, _ = m(idx)
    b, _ = m(idx2)
    np.testing.assert_allclose(a[:, :5].detach().numpy(), b[:, :5].detach().numpy(), atol=1e-5)
    assert not np.allclose(a[:, 5:].detach().numpy(), b[:, 5:].detach().numpy())
    with pytest.raises(ValueError, match="block size is only 8"):
        m(ampc.randint(0, 20, (1, 9)))


def test_gpt_trains_and_ties_gradients():
    ampc.manual_seed(0)
    m = GPT(vocab_size=16, block_size=8, n_layer=1, n_head=2, n_embd=16)
    seq = (ampc.arange(9).view(1, 9) + ampc.randint(0, 16, (4, 1))) % 16
    x, y = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    opt = ampc.optim.AdamW(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        _, loss = m(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.3
    assert m.lm_head.weight.grad is not None


def test_small_cnn_matches_the_same_network_in_torch():
    """Same weights, same input: ampc's SmallCNN and its torch.nn transcription agree, in train
    mode (batch statistics) and, after that step updated the running stats, in eval mode."""
    tm = tnn.Sequential(tnn.Conv2d(1, 32, 3, padding=1, bias=False), tnn.BatchNorm2d(32), tnn.ReLU(),
                        tnn.MaxPool2d(2), tnn.Conv2d(32, 64, 3, padding=1, bias=False), tnn.BatchNorm2d(64),
                        tnn.ReLU(), tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(64 * 7 * 7, 10))
    m = SmallCNN()
    ours = list(m.state_dict())
    theirs = tm.state_dict()
    m.load_state_dict({k: ampc.from_numpy(v.detach().numpy().copy()) for k, v in zip(ours, theirs.values())})
    x = np.random.default_rng(0).standard_normal((4, 1, 28, 28)).astype(np.float32)
    for train in (True, False):
        m.train(train)
        tm.train(train)
        np.testing.assert_allclose(m(ampc.from_numpy(x)).detach().numpy(), tm(torch.from_numpy(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-4)
