"""The peer of bench/gpu: PyTorch eager, fp32, batch 1, on the GPU, with the
same structure as tests/models/make_shaped_models.py's MobileNetV2 and
ResNet-18 (BatchNorm folded away, as reel's passes fold it: conv with bias).
Prints the median ms per inference of RUNS runs after a warm-up.
    python3 torch_models.py mobilenetv2-224|resnet18-224 RUNS
"""
import sys
import time

import torch
from torch import nn


def conv(cin, cout, k=1, s=1, groups=1, act="relu"):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=True)]
    if act == "relu":
        layers.append(nn.ReLU())
    elif act == "relu6":
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class Inverted(nn.Module):
    def __init__(self, cin, c, t, s):
        super().__init__()
        hidden = cin * t
        self.body = nn.Sequential(*([conv(cin, hidden, 1, act="relu6")] if t != 1 else []),
                                  conv(hidden, hidden, 3, s, hidden, act="relu6"), conv(hidden, c, 1, act=None))
        self.residual = s == 1 and cin == c

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


def mobilenet_v2():
    layers, cin = [conv(3, 32, 3, 2, act="relu6")], 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            layers.append(Inverted(cin, c, t, s if i == 0 else 1))
            cin = c
    layers += [conv(cin, 1280, 1, act="relu6"), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


class Basic(nn.Module):
    def __init__(self, cin, c, s):
        super().__init__()
        self.body = nn.Sequential(conv(cin, c, 3, s), conv(c, c, 3, 1, act=None))
        self.short = conv(cin, c, 1, s, act=None) if s != 1 or cin != c else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


def resnet18():
    layers, cin = [conv(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)], 64
    for c, s in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for i in range(2):
            layers.append(Basic(cin, c, s if i == 0 else 1))
            cin = c
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def main(name, runs):
    torch.backends.cudnn.allow_tf32 = False  # fp32 arithmetic, as reel's kernels
    torch.backends.cuda.matmul.allow_tf32 = False
    net = {"mobilenetv2-224": mobilenet_v2, "resnet18-224": resnet18}[name]().cuda().eval()
    x = torch.rand(1, 3, 224, 224, device="cuda")
    times = []
    with torch.no_grad():
        for i in range(runs + 5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            net(x).cpu()  # the result on the host, as reel's runs end
            if i >= 5:
                times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    print(f"{times[len(times) // 2]:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
