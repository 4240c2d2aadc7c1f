"""An MLP classifier captured from Python and trained by zcc on a synthetic
task (each image a class prototype plus noise):

    python examples/python/mlp.py [--steps 200] [--accumulate 4]

The program is examples/mlp.mlir's, written as a Python function.
"""

import argparse

import numpy as np

import zcc


def mlp_loss(images, labels):
    w1 = zcc.param("w1", (784, 256), init=zcc.init.uniform(-0.0357, 0.0357))
    b1 = zcc.param("b1", (256,))
    w2 = zcc.param("w2", (256, 128), init=zcc.init.uniform(-0.0625, 0.0625))
    b2 = zcc.param("b2", (128,))
    w3 = zcc.param("w3", (128, 10), init=zcc.init.uniform(-0.0884, 0.0884))
    b3 = zcc.param("b3", (10,))
    h = zcc.ops.relu(images @ w1 + b1)
    h = zcc.ops.relu(h @ w2 + b2)
    return zcc.ops.cross_entropy(h @ w3 + b3, labels)


def batch(step, rows=32, seed=7):
    prototypes = np.random.default_rng(seed).normal(size=(10, 784))
    rng = np.random.default_rng(1000 + step)
    labels = rng.integers(0, 10, size=rows).astype(np.int32)
    images = prototypes[labels] + 2.0 * rng.normal(size=(rows, 784))
    return images.astype(np.float32), labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--accumulate", type=int, default=1,
                        help="microbatches per optimizer step")
    args = parser.parse_args()

    traced = zcc.trace(mlp_loss, images=zcc.input((32, 784)),
                       labels=zcc.label((32,), "int32"))
    compiled = traced.compile(optimizer=zcc.adamw(lr=1e-3),
                              accumulate=args.accumulate > 1)
    memory = compiled.memory_analysis()
    print(f"arena {memory['arena']} bytes (lower bound {memory['lower_bound']}, "
          f"no reuse {memory['no_reuse']}), persistent {memory['persistent']}")
    session = compiled.session(microbatches=args.accumulate)
    for step in range(args.steps):
        parts = [batch(step * args.accumulate + k) for k in range(args.accumulate)]
        if args.accumulate > 1:
            images = np.stack([p[0] for p in parts])
            labels = np.stack([p[1] for p in parts])
        else:
            images, labels = parts[0]
        loss = session.step(images, labels)
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss:.6f}")
    print(f"allocations after load: {session.stats()['allocations_after_load']}")


if __name__ == "__main__":
    main()
