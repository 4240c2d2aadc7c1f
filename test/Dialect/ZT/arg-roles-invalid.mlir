// Function-argument roles and initializers: each case breaks one rule.
// RUN: zt-opt %s -split-input-file -verify-diagnostics

// A parameter lives in the persistent region and must say how it starts.
// expected-error @+1 {{argument #0 with role 'parameter' needs a 'zt.init' initializer}}
func.func @parameter_without_init(%w: tensor<4xf32> {zt.role = #zt.role<parameter>}) {
  return
}

// -----
// expected-error @+1 {{argument #0 with role 'parameter' must have a floating-point element type, got 'i32'}}
func.func @integer_parameter(%w: tensor<4xi32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) {
  return
}

// -----
// expected-error @+1 {{argument #0: 'zt.init' is only valid on a parameter, optimizer_state, accumulator or state argument}}
func.func @init_on_input(%x: tensor<4xf32> {zt.role = #zt.role<input>, zt.init = #zt.init<zeros>}) {
  return
}

// -----
// expected-error @+1 {{argument #0 with role 'input' must be a statically shaped tensor, got 'tensor<?x4xf32>'}}
func.func @dynamic_input(%x: tensor<?x4xf32> {zt.role = #zt.role<input>}) {
  return
}

// -----
// expected-error @+1 {{argument #0 with role 'label' must be a statically shaped tensor, got 'f32'}}
func.func @scalar_label(%x: f32 {zt.role = #zt.role<label>}) {
  return
}

// -----
// expected-error @+1 {{argument #0 with role 'input' must have element type f32, f16, bf16, i32 or i64, got 'i8'}}
func.func @byte_input(%x: tensor<4xi8> {zt.role = #zt.role<input>}) {
  return
}

// -----
// expected-error @+1 {{argument #0 with role 'step' must be tensor<i64>, got 'tensor<1xi64>'}}
func.func @step_shape(%s: tensor<1xi64> {zt.role = #zt.role<step>}) {
  return
}

// -----
// expected-error @+1 {{argument #0: 'zt.role' must be a #zt.role<...> attribute, got "input"}}
func.func @role_as_string(%x: tensor<4xf32> {zt.role = "input"}) {
  return
}

// -----
// expected-error @+1 {{argument #0: 'zt.init' must be a #zt.init<...> attribute, got 0.000000e+00 : f32}}
func.func @init_as_number(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = 0.0 : f32}) {
  return
}

// -----
// expected-error @+1 {{argument #0: unknown zt argument attribute 'zt.rol'; expected 'zt.role', 'zt.init' or 'zt.name'}}
func.func @misspelled(%x: tensor<4xf32> {zt.rol = #zt.role<input>}) {
  return
}

// -----
// expected-error @+1 {{unknown initializer 'gaussian'; expected zeros, ones, constant, normal or uniform}}
func.func @unknown_init(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<gaussian>}) {
  return
}

// -----
// expected-error @+1 {{initializer normal: 'std' must be positive, got 0}}
func.func @normal_std(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(mean = 0.0, std = 0.0)>}) {
  return
}

// -----
// expected-error @+1 {{initializer uniform: 'low' must be below 'high', got low = 1, high = -1}}
func.func @uniform_bounds(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<uniform(low = 1.0, high = -1.0)>}) {
  return
}

// -----
// expected-error @+1 {{expected 'mean'}}
func.func @normal_names(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<normal(std = 1.0, mean = 0.0)>}) {
  return
}

// -----
// expected-error @+1 {{expected '('}}
func.func @constant_without_value(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<constant>}) {
  return
}

// -----
// expected-error @+2 {{expected ::zcc::zt::ArgRole to be one of: input, label, parameter, step}}
// expected-error @+1 {{failed to parse ZT_ArgRoleAttr parameter 'value'}}
func.func @unknown_role(%x: tensor<4xf32> {zt.role = #zt.role<weights>}) {
  return
}

// -----

// Optimizer state and accumulators are persistent: they need an initializer.
// expected-error @+1 {{argument #0 with role 'optimizer_state' needs a 'zt.init' initializer}}
func.func @state_without_init(%m: tensor<4xf32> {zt.role = #zt.role<optimizer_state>}) {
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'accumulator' must have a floating-point element type, got 'i32'}}
func.func @integer_accumulator(%a: tensor<4xi32> {zt.role = #zt.role<accumulator>, zt.init = #zt.init<zeros>}) {
  return
}

// -----

// State (BatchNorm's running statistics) is persistent and checkpointed too.
// expected-error @+1 {{argument #0 with role 'state' needs a 'zt.init' initializer}}
func.func @state_role_without_init(%s: tensor<4xf32> {zt.role = #zt.role<state>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'zt.name' must be a non-empty string of printable characters without spaces, got "two words"}}
func.func @name_with_space(%x: tensor<4xf32> {zt.role = #zt.role<input>, zt.name = "two words"}) {
  return
}

// -----

// expected-error @+1 {{result #0: 'zt.tied' names argument #0, which is not persistent (a parameter, optimizer_state, accumulator or state): only persistent tensors are updated in place}}
func.func @tied_to_input(%x: tensor<4xf32> {zt.role = #zt.role<input>}) -> (tensor<4xf32> {zt.tied = 0 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'zt.tied' names argument #3, but the function has 1 arguments}}
func.func @tied_out_of_range(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> (tensor<4xf32> {zt.tied = 3 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{result #0: 'zt.gradient_of' names argument #0 of type 'tensor<4xf32>', but the result has type 'tensor<8xf32>'}}
func.func @gradient_type(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}, %g: tensor<8xf32> {zt.role = #zt.role<input>}) -> (tensor<8xf32> {zt.gradient_of = 0 : i64}) {
  return %g : tensor<8xf32>
}

// -----

// expected-error @+1 {{result #0: unknown zt result attribute 'zt.tie'; expected 'zt.tied', 'zt.gradient_of' or 'zt.name'}}
func.func @misspelled_result(%w: tensor<4xf32> {zt.role = #zt.role<parameter>, zt.init = #zt.init<zeros>}) -> (tensor<4xf32> {zt.tie = 0 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'zt.entry' must be one of "train_step", "microbatch", "apply", "eval", "predict", got "step"}}
func.func @bad_entry() attributes {zt.entry = "step"} {
  return
}

// -----

// expected-error @+1 {{unknown zt attribute 'zt.entri'}}
func.func @unknown_function_attr() attributes {zt.entri = "apply"} {
  return
}
