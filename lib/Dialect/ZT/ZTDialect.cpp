//===- ZTDialect.cpp - zt dialect, attributes, argument roles -------------===//

#include "zcc/Dialect/ZT/ZTDialect.h"

#include "FormatNumber.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Runtime/Plan/PlanEnums.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace zcc::zt;
using zcc::zt::detail::formatNumber;

#include "zcc/Dialect/ZT/ZTDialect.cpp.inc"
#include "zcc/Dialect/ZT/ZTEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "zcc/Dialect/ZT/ZTAttrs.cpp.inc"

void ZTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zcc/Dialect/ZT/ZTOps.cpp.inc"
      >();
  registerAttributes();
}

void ZTDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "zcc/Dialect/ZT/ZTAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

unsigned InitAttr::getNumValues(InitKind kind) {
  return getValueNames(kind).size();
}

ArrayRef<StringRef> InitAttr::getValueNames(InitKind kind) {
  static const StringRef constantNames[] = {"value"};
  static const StringRef normalNames[] = {"mean", "std"};
  static const StringRef uniformNames[] = {"low", "high"};
  switch (kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
  case InitKind::Given:
    return {};
  case InitKind::Constant:
    return constantNames;
  case InitKind::Normal:
    return normalNames;
  case InitKind::Uniform:
    return uniformNames;
  }
  llvm_unreachable("unknown InitKind");
}

InitAttr InitAttr::getZeros(MLIRContext *ctx) {
  return get(ctx, InitKind::Zeros, APFloat(0.0), APFloat(0.0));
}

InitAttr InitAttr::getNormal(MLIRContext *ctx, double mean, double std) {
  return get(ctx, InitKind::Normal, APFloat(mean), APFloat(std));
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat first, APFloat second) {
  ArrayRef<StringRef> names = getValueNames(kind);
  const APFloat values[] = {first, second};
  for (auto [name, value] : llvm::zip(names, values))
    if (!value.isFinite())
      return emitError() << "initializer " << stringifyInitKind(kind) << ": '"
                         << name << "' must be finite";
  // Unused slots stay zero so equal initializers are one uniqued attribute.
  for (unsigned i = names.size(); i < 2; ++i)
    if (!values[i].isZero())
      return emitError() << "initializer " << stringifyInitKind(kind)
                         << " takes " << names.size() << " value(s)";
  if (kind == InitKind::Normal && !(second.convertToDouble() > 0.0))
    return emitError() << "initializer normal: 'std' must be positive, got "
                       << formatNumber(second.convertToDouble());
  if (kind == InitKind::Uniform &&
      !(first.convertToDouble() < second.convertToDouble()))
    return emitError()
           << "initializer uniform: 'low' must be below 'high', got low = "
           << formatNumber(first.convertToDouble())
           << ", high = " << formatNumber(second.convertToDouble());
  return success();
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc, "unknown initializer '")
        << keyword << "'; expected zeros, ones, constant, normal or uniform";
    return {};
  }
  double values[2] = {0.0, 0.0};
  ArrayRef<StringRef> names = getValueNames(*kind);
  if (!names.empty()) {
    if (parser.parseLParen())
      return {};
    for (auto [index, name] : llvm::enumerate(names)) {
      if ((index > 0 && parser.parseComma()) || parser.parseKeyword(name) ||
          parser.parseEqual() || parser.parseFloat(values[index]))
        return {};
    }
    if (parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    *kind, APFloat(values[0]), APFloat(values[1]));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  ArrayRef<StringRef> names = getValueNames(getKind());
  if (!names.empty()) {
    const APFloat values[] = {getFirst(), getSecond()};
    printer << '(';
    llvm::interleaveComma(llvm::seq<size_t>(0, names.size()), printer,
                          [&](size_t i) {
                            printer << names[i] << " = ";
                            printer.printFloat(values[i]);
                          });
    printer << ')';
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// Function-argument roles
//===----------------------------------------------------------------------===//

static bool isFloatElement(Type type) {
  return type.isF32() || type.isF16() || type.isBF16();
}

static bool isIndexElement(Type type) {
  return type.isSignlessInteger(32) || type.isSignlessInteger(64);
}

static LogicalResult verifyArgRole(FunctionOpInterface fn, unsigned argIndex,
                                   ArgRole role) {
  Type argType = fn.getArgumentTypes()[argIndex];
  auto emit = [&]() {
    return fn->emitOpError() << "argument #" << argIndex << " with role '"
                             << stringifyArgRole(role) << "' ";
  };
  auto tensorType = dyn_cast<RankedTensorType>(argType);
  if (!tensorType || !tensorType.hasStaticShape())
    return emit() << "must be a statically shaped tensor, got " << argType;
  Type element = tensorType.getElementType();
  switch (role) {
  case ArgRole::Input:
  case ArgRole::Label:
    if (!isFloatElement(element) && !isIndexElement(element))
      return emit() << "must have element type f32, f16, bf16, i32 or i64, got "
                    << element;
    return success();
  case ArgRole::Parameter:
  case ArgRole::OptimizerState:
  case ArgRole::Accumulator:
  case ArgRole::State:
    if (!isFloatElement(element))
      return emit() << "must have a floating-point element type, got "
                    << element;
    if (!fn.getArgAttr(argIndex, ZTDialect::kInitAttrName))
      return emit() << "needs a '" << ZTDialect::kInitAttrName
                    << "' initializer";
    return success();
  case ArgRole::Step:
    if (tensorType.getRank() != 0 || !element.isSignlessInteger(64))
      return emit() << "must be tensor<i64>, got " << argType;
    return success();
  }
  llvm_unreachable("unknown ArgRole");
}

/// Names identify persistent tensors across entry points and in
/// checkpoints: non-empty printable text.
static LogicalResult verifyName(FunctionOpInterface fn, StringRef what,
                                unsigned index, Attribute value) {
  auto name = dyn_cast<StringAttr>(value);
  if (name && !name.getValue().empty() &&
      llvm::all_of(name.getValue(), [](char c) { return c > ' ' && c < 127; }))
    return success();
  return fn->emitOpError() << what << " #" << index << ": '"
                           << ZTDialect::kNameAttrName
                           << "' must be a non-empty string of printable "
                              "characters without spaces, got "
                           << value;
}

LogicalResult ZTDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || regionIndex != 0)
    return op->emitError() << "'" << name
                           << "' is only valid on function arguments";
  if (name == kRoleAttrName) {
    auto role = dyn_cast<ArgRoleAttr>(attribute.getValue());
    if (!role)
      return fn->emitOpError()
             << "argument #" << argIndex << ": '" << kRoleAttrName
             << "' must be a #zt.role<...> attribute, got "
             << attribute.getValue();
    return verifyArgRole(fn, argIndex, role.getValue());
  }
  if (name == kInitAttrName) {
    if (!isa<InitAttr>(attribute.getValue()))
      return fn->emitOpError()
             << "argument #" << argIndex << ": '" << kInitAttrName
             << "' must be a #zt.init<...> attribute, got "
             << attribute.getValue();
    auto role = fn.getArgAttrOfType<ArgRoleAttr>(argIndex, kRoleAttrName);
    if (!role || !isPersistentRole(role.getValue()))
      return fn->emitOpError()
             << "argument #" << argIndex << ": '" << kInitAttrName
             << "' is only valid on a parameter, optimizer_state, "
                "accumulator or state argument";
    return success();
  }
  if (name == kNameAttrName)
    return verifyName(fn, "argument", argIndex, attribute.getValue());
  return fn->emitOpError() << "argument #" << argIndex
                           << ": unknown zt argument attribute '" << name
                           << "'; expected '" << kRoleAttrName << "', '"
                           << kInitAttrName << "' or '" << kNameAttrName
                           << "'";
}

/// `zt.tied` and `zt.gradient_of` name an argument of the same type as the
/// result; a tied argument must be persistent, since it is overwritten.
static LogicalResult verifyResultArgIndex(FunctionOpInterface fn,
                                          unsigned resultIndex, StringRef name,
                                          Attribute value) {
  auto emit = [&]() {
    return fn->emitOpError() << "result #" << resultIndex << ": '" << name
                             << "' ";
  };
  auto index = dyn_cast<IntegerAttr>(value);
  if (!index || !index.getType().isInteger(64))
    return emit() << "must be an i64 argument index, got " << value;
  int64_t arg = index.getInt();
  if (arg < 0 || arg >= static_cast<int64_t>(fn.getNumArguments()))
    return emit() << "names argument #" << arg << ", but the function has "
                  << fn.getNumArguments() << " arguments";
  Type argType = fn.getArgumentTypes()[arg];
  Type resultType = fn.getResultTypes()[resultIndex];
  if (argType != resultType)
    return emit() << "names argument #" << arg << " of type " << argType
                  << ", but the result has type " << resultType;
  if (name != ZTDialect::kTiedAttrName)
    return success();
  auto role = fn.getArgAttrOfType<ArgRoleAttr>(arg, ZTDialect::kRoleAttrName);
  if (!role || !isPersistentRole(role.getValue()))
    return emit() << "names argument #" << arg
                  << ", which is not persistent (a parameter, optimizer_state, "
                     "accumulator or state): only persistent tensors are "
                     "updated in place";
  return success();
}

LogicalResult ZTDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || regionIndex != 0)
    return op->emitError() << "'" << name
                           << "' is only valid on function results";
  if (name == kTiedAttrName || name == kGradientOfAttrName)
    return verifyResultArgIndex(fn, resultIndex, name, attribute.getValue());
  if (name == kNameAttrName)
    return verifyName(fn, "result", resultIndex, attribute.getValue());
  return fn->emitOpError() << "result #" << resultIndex
                           << ": unknown zt result attribute '" << name
                           << "'; expected '" << kTiedAttrName << "', '"
                           << kGradientOfAttrName << "' or '" << kNameAttrName
                           << "'";
}

LogicalResult ZTDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name == kBackwardStartAttrName) {
    auto start = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!isa<FunctionOpInterface>(op) || !start || start.getInt() < 0)
      return op->emitError() << "'" << name
                             << "' must be a non-negative integer on a "
                                "function";
    return success();
  }
  if (name == kRecomputeAttrName || name == kRematExhaustedAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' is a unit attribute";
    if (name == kRematExhaustedAttrName && !isa<ModuleOp>(op))
      return op->emitError() << "'" << name << "' is only valid on a module";
    return success();
  }
  if (name == kShardedStatesAttrName) {
    auto list = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!isa<ModuleOp>(op) || !list)
      return op->emitError() << "'" << name << "' is an array on a module";
    for (Attribute item : list) {
      auto dict = dyn_cast<DictionaryAttr>(item);
      if (!dict || !dict.getAs<StringAttr>("name") ||
          !dict.getAs<StringAttr>("suffix") ||
          !dict.getAs<IntegerAttr>("ranks") ||
          !dict.getAs<ArrayAttr>("params") ||
          !dict.getAs<DenseI64ArrayAttr>("offsets") ||
          dict.getAs<ArrayAttr>("params").size() !=
              dict.getAs<DenseI64ArrayAttr>("offsets").size())
        return op->emitError()
               << "'" << name
               << "' entries need a name, a suffix, ranks, and as many "
                  "params as offsets";
    }
    return success();
  }
  if (name != kEntryAttrName)
    return op->emitError() << "unknown zt attribute '" << name << "'";
  if (!isa<FunctionOpInterface>(op))
    return op->emitError() << "'" << name << "' is only valid on a function";
  auto kind = dyn_cast<StringAttr>(attribute.getValue());
  if (!kind || !zcc::runtime::parseEntryKind(kind.getValue())) {
    std::string kinds;
    for (const auto &entry : zcc::runtime::kEntryKindNames)
      kinds += std::string(kinds.empty() ? "\"" : ", \"") + entry.name + "\"";
    return op->emitError() << "'" << name << "' must be one of " << kinds
                           << ", got " << attribute.getValue();
  }
  return success();
}
