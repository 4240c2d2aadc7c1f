//===- PrintArgRoles.cpp - print training-step argument roles -------------===//

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "zcc/Dialect/ZT/ZTOps.h"
#include "zcc/Transforms/BufferLiveness.h"
#include "zcc/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <array>

namespace zcc {
#define GEN_PASS_DEF_ZTPRINTARGROLES
#include "zcc/Transforms/Passes.h.inc"
} // namespace zcc

using namespace mlir;
using namespace zcc::zt;

namespace {

struct RoleTotal {
  int64_t tensors = 0;
  int64_t bytes = 0;
};

struct ZTPrintArgRolesPass
    : public zcc::impl::ZTPrintArgRolesBase<ZTPrintArgRolesPass> {
  void runOnOperation() override {
    // Functions in module order, arguments in index order: stable output.
    for (auto fn : getOperation().getOps<FunctionOpInterface>())
      if (failed(printFunction(fn)))
        return signalPassFailure();
  }

  LogicalResult printFunction(FunctionOpInterface fn) {
    unsigned numArgs = fn.getNumArguments();
    auto roleOf = [&](unsigned i) {
      return fn.getArgAttrOfType<ArgRoleAttr>(i, ZTDialect::kRoleAttrName);
    };
    bool anyRole = false;
    for (unsigned i = 0; i < numArgs; ++i)
      anyRole |= static_cast<bool>(roleOf(i));
    if (!anyRole)
      return success();
    for (unsigned i = 0; i < numArgs; ++i)
      if (!roleOf(i))
        return fn->emitOpError()
               << "argument #" << i
               << " has no 'zt.role'; once one argument of a training-step "
                  "function has a role, every argument needs one";

    llvm::raw_ostream &os = llvm::outs();
    os << "zt-print-arg-roles @" << fn.getName() << "\n";
    std::array<RoleTotal, getMaxEnumValForArgRole() + 1> totals{};
    for (unsigned i = 0; i < numArgs; ++i) {
      ArgRoleAttr role = roleOf(i);
      // The dialect's argument verifier has made this a static tensor.
      auto type = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      int64_t bytes = zcc::tensorBytes(type);
      os << "  arg #" << i << " " << stringifyArgRole(role.getValue()) << " "
         << type << " " << bytes << " bytes";
      if (auto init =
              fn.getArgAttrOfType<InitAttr>(i, ZTDialect::kInitAttrName))
        os << " init " << init;
      os << "\n";
      RoleTotal &total = totals[static_cast<unsigned>(role.getValue())];
      ++total.tensors;
      total.bytes += bytes;
    }
    for (unsigned r = 0; r < totals.size(); ++r) {
      if (totals[r].tensors == 0)
        continue;
      os << "  total " << stringifyArgRole(static_cast<ArgRole>(r)) << ": "
         << totals[r].tensors << " tensors, " << totals[r].bytes << " bytes\n";
    }
    return success();
  }
};

} // namespace
