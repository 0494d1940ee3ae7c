"""FLOPs, memory traffic and collectives of a compiled program, loop trip counts included.

XLA's `cost_analysis()` counts a while loop's body once, whatever its trip count, and on
GPU targets it returns nothing. A training call is loops in loops (updates, rollout
steps, epochs, minibatches), so this module walks the optimised HLO text instead
(`compiled.as_text()`) and multiplies each computation's cost by how often it runs:

  cost(C) = own(C) + sum over calls c in C of  runs(c) * cost(callee(c))

with runs = the while loop's trip count (XLA's `known_trip_count`, else the bound its
condition compares the counter with) and 1 for fusions, calls and the costliest branch of
a conditional. Per instruction:
* FLOPs: dot 2 * |out| * |contracted|; convolution 2 * |out| * |kernel| / out-features;
  elementwise arithmetic |out|; reductions |input|. Other ops (data movement) none.
* bytes: operands + result of each instruction outside fusions (a fusion's inside stays
  on chip; a buffer it only slices or gathers from counts the rows read, one it updates
  in place its update), except bookkeeping ops (parameters, tuples, bitcasts, control flow); `ops`
  counts those instructions (kernel launches, roughly: what bounds a small program).
These are the compiler's shapes, not measurements: a roofline's inputs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Iterator

BYTES = {
  "pred": 1,
  "s8": 1,
  "u8": 1,
  "s4": 1,
  "u4": 1,
  "f8e4m3fn": 1,
  "f8e5m2": 1,
  "bf16": 2,
  "f16": 2,
  "s16": 2,
  "u16": 2,
  "f32": 4,
  "s32": 4,
  "u32": 4,
  "f64": 8,
  "s64": 8,
  "u64": 8,
  "c64": 8,
  "c128": 16,
}
ELEMENTWISE = frozenset(
  "add subtract multiply divide maximum minimum exponential exponential-minus-one log "
  "log-plus-one tanh logistic sqrt rsqrt cbrt power negate abs sign floor ceil "
  "round-nearest-afz round-nearest-even compare select clamp and or xor not remainder "
  "atan2 sine cosine tan erf".split()
)
REDUCTIONS = frozenset(("reduce", "reduce-window", "select-and-scatter"))
NO_TRAFFIC = frozenset(
  "parameter constant tuple get-tuple-element bitcast while call conditional after-all "
  "partition-id replica-id iota opt-barrier".split()
)
COLLECTIVES = (
  "all-reduce",
  "collective-permute",
  "all-gather",
  "reduce-scatter",
  "all-to-all",
  "collective-broadcast",
)
_SHAPE = re.compile(r"\b(" + "|".join(BYTES) + r")\[([\d,]*)\]")
_HEADER = re.compile(r"^(ENTRY )?%?([\w.\-]+) \(.*\) -> .* \{$")


@dataclasses.dataclass
class Cost:
  """A program's (or computation's) totals, loops multiplied in."""

  flops: float = 0.0
  bytes: float = 0.0
  collectives: dict = dataclasses.field(default_factory=dict)  # op -> [count, bytes]
  unknown_loops: int = 0  # while loops whose trip count was not found (counted once)
  ops: float = 0.0  # executed instructions outside fusions (kernels, copies, collectives)

  def add(self, other: "Cost", times: float = 1.0) -> None:
    self.flops += times * other.flops
    self.bytes += times * other.bytes
    self.ops += times * other.ops
    self.unknown_loops += other.unknown_loops
    for op, (count, nbytes) in other.collectives.items():
      mine = self.collectives.setdefault(op, [0.0, 0.0])
      mine[0] += times * count
      mine[1] += times * nbytes


@dataclasses.dataclass
class Instruction:
  name: str
  shape: str  # result type text
  opcode: str
  operands: str  # operand list text (with operand types)
  attrs: str
  root: bool = False


def shapes(text: str) -> Iterator[tuple[str, tuple[int, ...]]]:
  for dtype, dims in _SHAPE.findall(text):
    yield dtype, tuple(int(d) for d in dims.split(",") if d)


def nbytes(text: str) -> int:
  return sum(BYTES[t] * math.prod(d) for t, d in shapes(text))


def elements(text: str) -> int:
  return sum(math.prod(d) for _, d in shapes(text))


def _balanced(s: str, start: int) -> int:
  """Index just past the bracket group opening at s[start]."""
  depth, pairs = 0, {"(": ")", "{": "}", "[": "]"}
  closing = set(pairs.values())
  for i in range(start, len(s)):
    if s[i] in pairs:
      depth += 1
    elif s[i] in closing:
      depth -= 1
      if depth == 0:
        return i + 1
  return len(s)


def parse_instruction(line: str) -> Instruction | None:
  line = line.strip()
  root = line.startswith("ROOT ")
  if root:
    line = line[5:]
  if " = " not in line:
    return None
  name, rest = line.split(" = ", 1)
  if rest.startswith("("):
    end = _balanced(rest, 0)
  else:
    end = rest.find(" ")
  shape, rest = rest[:end], rest[end:].strip()
  m = re.match(r"([\w\-]+)\(", rest)
  if not m:
    return None
  close = _balanced(rest, m.end() - 1)
  return Instruction(
    name.lstrip("%"), shape, m.group(1), rest[m.end() : close - 1], rest[close:], root
  )


def parse_module(hlo_text: str) -> tuple[dict[str, list[Instruction]], str]:
  """{computation name: instructions}, and the entry computation's name."""
  computations: dict[str, list[Instruction]] = {}
  entry, current = "", None
  for line in hlo_text.splitlines():
    header = _HEADER.match(line.strip())
    if header:
      current = computations.setdefault(header.group(2), [])
      if header.group(1):
        entry = header.group(2)
      continue
    if line.strip() == "}":
      current = None
      continue
    if current is not None:
      inst = parse_instruction(line)
      if inst:
        current.append(inst)
  return computations, entry


def _callee(attrs: str, key: str) -> str | None:
  m = re.search(key + r"=%?([\w.\-]+)", attrs)
  return m.group(1) if m else None


def trip_count(inst: Instruction, computations: dict[str, list[Instruction]]) -> int | None:
  """A while loop's trip count: XLA's known_trip_count, else the constant its condition
  compares the counter with (a counter from 0 in steps of 1, as `lax.scan`'s)."""
  m = re.search(r'"known_trip_count":\{"n":"(\d+)"', inst.attrs)
  if m:
    return int(m.group(1))
  condition = computations.get(_callee(inst.attrs, "condition") or "", [])
  constants = {}
  for c in condition:
    if c.opcode == "constant" and re.fullmatch(r"s(32|64)\[\]", c.shape.split("{")[0]):
      constants[c.name] = int(c.operands)
  for c in condition:
    if c.opcode == "compare" and "direction=LT" in c.attrs:
      for name in re.findall(r"%([\w.\-]+)", c.operands):
        if name in constants:
          return constants[name]
  # The compare may sit in a fusion of the condition.
  for c in condition:
    if c.opcode == "fusion":
      inner = computations.get(_callee(c.attrs, "calls") or "", [])
      values = [
        int(i.operands)
        for i in inner
        if i.opcode == "constant" and re.fullmatch(r"s(32|64)\[\]", i.shape.split("{")[0])
      ]
      if any(i.opcode == "compare" and "direction=LT" in i.attrs for i in inner) and values:
        return max(values)
  return None


def operand_list(inst: Instruction, types: dict[str, str]) -> list[str]:
  """Each operand's type: printed inline by some XLA versions, else looked up by name."""
  parts, depth, start = [], 0, 0
  for i, ch in enumerate(inst.operands + ","):
    if ch in "({[":
      depth += 1
    elif ch in ")}]":
      depth -= 1
    elif ch == "," and depth == 0:
      parts.append(inst.operands[start:i].strip())
      start = i + 1
  out = []
  for part in parts:
    if _SHAPE.search(part):
      out.append(part)
    else:
      names = re.findall(r"%([\w.\-]+)", part)
      out.append(types.get(names[0], "") if names else "")
  return out


def _names(text: str) -> list[str]:
  return re.findall(r"%([\w.\-]+)", text)


def _written_bytes(
  inst: Instruction, by_name: dict[str, Instruction], types: dict[str, str]
) -> int:
  """Bytes an instruction's result writes: a dynamic-update-slice writes its update (in
  place); a tuple, the sum of its elements'."""
  if inst.opcode == "dynamic-update-slice":
    operands = operand_list(inst, types)
    return nbytes(operands[1]) if len(operands) > 1 else nbytes(inst.shape)
  if inst.opcode == "tuple":
    return sum(
      _written_bytes(by_name[n], by_name, types) if n in by_name else 0
      for n in _names(inst.operands)
    )
  return nbytes(inst.shape)


def fusion_traffic(inst: Instruction, operands: list[str], fused: list[Instruction]) -> int:
  """Bytes a fusion moves: each operand read once, except a buffer it only slices (the
  slices) or only updates in place (nothing), plus what its root writes."""
  types = {i.name: i.shape for i in fused}
  by_name = {i.name: i for i in fused}
  params = {
    int(i.operands): i.name
    for i in fused
    if i.opcode == "parameter" and i.operands.strip().isdigit()
  }
  total = 0
  for index, shape in enumerate(operands):
    name = params.get(index)
    uses = [u for u in fused if name and name in _names(u.operands)]
    first = lambda u: (_names(u.operands) or [""])[0] == name
    if uses and all(u.opcode in ("dynamic-slice", "gather") and first(u) for u in uses):
      total += sum(nbytes(u.shape) for u in uses)
    elif uses and all(u.opcode == "dynamic-update-slice" and first(u) for u in uses):
      continue
    else:
      total += nbytes(shape)
  root = next((i for i in fused if i.root), fused[-1] if fused else None)
  return total + (_written_bytes(root, by_name, types) if root else nbytes(inst.shape))


def instruction_flops(inst: Instruction, operands: str) -> float:
  """FLOPs of one instruction; `operands`: its operand types, as text."""
  out = elements(inst.shape)
  if inst.opcode == "dot":
    lhs = next(shapes(operands), ("f32", ()))[1]
    m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", inst.attrs)
    dims = [int(d) for d in m.group(1).split(",") if d] if m else []
    return 2.0 * out * math.prod(lhs[d] for d in dims if d < len(lhs))
  if inst.opcode == "convolution":
    operand_shapes = list(shapes(operands))
    m = re.search(r"dim_labels=\w+_(\w+)->", inst.attrs)
    if len(operand_shapes) < 2 or not m:
      return 0.0
    kernel = operand_shapes[1][1]
    out_features = kernel[m.group(1).index("o")] if "o" in m.group(1) else 1
    return 2.0 * out * math.prod(kernel) / max(1, out_features)
  if inst.opcode in ELEMENTWISE:
    return float(out)
  if inst.opcode in REDUCTIONS:
    return float(elements(operands))
  return 0.0


def computation_cost(
  name: str,
  computations: dict[str, list[Instruction]],
  memo: dict[tuple[str, bool], Cost],
  traffic: bool = True,
  multiply_loops: bool = True,
) -> Cost:
  """The cost of one run of computation `name`; `traffic` False inside fusions."""
  key = (name, traffic)
  if key in memo:
    return memo[key]
  total = Cost()
  instructions = computations.get(name, [])
  types = {inst.name: inst.shape for inst in instructions}
  by_name = {inst.name: inst for inst in instructions}
  for inst in instructions:
    listed = operand_list(inst, types)
    operands = " ".join(listed)
    total.flops += instruction_flops(inst, operands)
    base = inst.opcode.removesuffix("-start")
    if traffic and inst.opcode not in NO_TRAFFIC and not inst.opcode.endswith("-done"):
      if inst.opcode == "fusion":
        total.bytes += fusion_traffic(
          inst, listed, computations.get(_callee(inst.attrs, "calls"), [])
        )
      elif inst.opcode in ("dynamic-slice", "gather"):
        total.bytes += 2 * nbytes(inst.shape)
      elif 'custom_call_target="AllocateBuffer"' in inst.attrs:
        continue  # reserves the buffer a loop then fills in place
      elif inst.opcode == "dynamic-update-slice":
        total.bytes += 2 * _written_bytes(inst, by_name, types)
      else:
        total.bytes += nbytes(operands) + nbytes(inst.shape)
      total.ops += 1
    if base in COLLECTIVES and not inst.opcode.endswith("-done"):
      entry = total.collectives.setdefault(base, [0.0, 0.0])
      entry[0] += 1
      entry[1] += nbytes(operands)
    _add_called(total, inst, computations, memo, traffic, multiply_loops)
  memo[key] = total
  return total


def _add_called(
  total: Cost,
  inst: Instruction,
  computations: dict[str, list[Instruction]],
  memo: dict[tuple[str, bool], Cost],
  traffic: bool,
  multiply_loops: bool,
) -> None:
  """Adds to `total` the computations `inst` runs: a while loop's body times its trip count
  (once, and counted unknown, where none is found), a fusion's (no traffic inside), a call's,
  the costliest branch of a conditional."""
  cost = lambda name, traffic=traffic: computation_cost(
    name, computations, memo, traffic, multiply_loops
  )
  if inst.opcode == "while":
    trips = trip_count(inst, computations) if multiply_loops else 1
    if trips is None:
      trips = 1
      total.unknown_loops += 1
    total.add(cost(_callee(inst.attrs, "body")), trips)
  elif inst.opcode == "fusion":
    total.add(cost(_callee(inst.attrs, "calls"), False))
  elif inst.opcode in ("call", "async-start"):
    callee = _callee(inst.attrs, "to_apply") or _callee(inst.attrs, "calls")
    if callee:
      total.add(cost(callee))
  elif inst.opcode == "conditional":
    m = re.search(r"branch_computations=\{([^}]*)\}", inst.attrs)
    names = re.findall(r"%?([\w.\-]+)", m.group(1)) if m else []
    names += [n for k in ("true_computation", "false_computation") if (n := _callee(inst.attrs, k))]
    branches = [cost(n) for n in names]
    if branches:
      total.add(max(branches, key=lambda c: (c.flops, c.bytes)))


def program_cost(hlo_text: str, multiply_loops: bool = True) -> Cost:
  """The entry computation's cost; `multiply_loops=False` counts each loop body once
  (what `cost_analysis()` does)."""
  computations, entry = parse_module(hlo_text)
  return computation_cost(entry, computations, {}, True, multiply_loops)
