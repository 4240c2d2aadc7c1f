"""Writes a zt model of LAYERS square matrix products of WIDTH (no biases,
batch 2) to stdout: gradients of LAYERS * WIDTH^2 * 4 bytes, one per layer,
for tests of how zt-optimizer sizes data-parallel buckets. Only its IR is
compiled (nothing runs), so the shapes may be large."""
import sys

layers, width = int(sys.argv[1]), int(sys.argv[2])
t = f"tensor<{width}x{width}xf32>"
h = f"tensor<2x{width}xf32>"
args = [f'%x: {h} {{zt.name = "x", zt.role = #zt.role<input>}}',
        '%labels: tensor<2xi32> {zt.name = "labels", zt.role = #zt.role<label>}']
args += [f'%w{i}: {t} {{zt.name = "w{i}", zt.role = #zt.role<parameter>, '
         'zt.init = #zt.init<uniform(low = -0.01, high = 0.01)>}'
         for i in range(layers)]
print("func.func @chain_loss(\n    " + ",\n    ".join(args) + ") -> tensor<f32> {")
previous = "%x"
for i in range(layers):
    print(f"  %h{i} = zt.matmul {previous}, %w{i} : ({h}, {t}) -> {h}")
    previous = f"%h{i}"
print(f"  %loss = zt.softmax_cross_entropy {previous}, %labels : ({h}, tensor<2xi32>) -> tensor<f32>")
print("  return %loss : tensor<f32>\n}")
