// harden.js runs first in every sandbox runtime, before the bridge preamble
// and the user's code. It receives the limits (L) and the host natives
// (host), and:
//   1. removes capabilities and code generation (eval, Function, BigInt,
//      typed arrays, Proxy…), so the only way out is __kiln_call;
//   2. caps the builtins that can allocate without bound, or recurse in Go,
//      inside one native step that goja cannot interrupt — a limit has to be
//      checked before such a step starts;
//   3. installs console (captured by the host) and __kiln_call;
//   4. freezes Object.prototype.
// Everything it needs later is captured here, so user code that replaces a
// global cannot reach an uncapped original.
(function (L, host) {
"use strict";
const G = globalThis;
const O = Object, A = Array, S = String, R = Reflect;
const apply = R.apply, construct = R.construct;
const defineProperty = O.defineProperty, getOwnPropertyDescriptor = O.getOwnPropertyDescriptor;
const getOwnPropertyNames = O.getOwnPropertyNames, getPrototypeOf = O.getPrototypeOf;
const freeze = O.freeze, isArray = A.isArray;
const floor = Math.floor, trunc = Math.trunc, min = Math.min;
const TypeErr = TypeError, RangeErr = RangeError;
const origStringify = JSON.stringify, origParse = JSON.parse;
const objToString = O.prototype.toString;
const wmGet = WeakMap.prototype.get, wmSet = WeakMap.prototype.set;
const SetCtor = Set, setHas = Set.prototype.has, setAdd = Set.prototype.add;
const strIndexOf = S.prototype.indexOf, strSlice = S.prototype.slice;
const dateNow = Date.now;
const iterSym = Symbol.iterator, spreadSym = Symbol.isConcatSpreadable;
const AP = A.prototype, SP = S.prototype, FP = Function.prototype;
const NOARGS = freeze([]);

const limit = (what, max) => {
  throw new RangeErr(what + " would exceed the sandbox limit of " + max + "; work on smaller pieces");
};
const coercible = (v, name) => {
  if (v === null || v === undefined) throw new TypeErr(name + " called on null or undefined");
  return v;
};
const toInt = (v) => { const n = +v; return n !== n ? 0 : trunc(n); };
const toLen = (v) => { const n = toInt(v); return n <= 0 ? 0 : min(n, 9007199254740991); };
const arrayLen = (o) => {
  const n = toLen(o.length);
  if (n > L.maxArray) limit("an array of " + n + " elements", L.maxArray + " elements");
  return n;
};
const checkString = (n, what) => {
  if (n > L.maxString) limit(what + " of " + n + " characters", L.maxString + " characters");
};

// install replaces the builtin obj[name]. Assignment keeps the property's
// attributes; fn comes from a method definition, so like the builtin it is
// not a constructor. (Its length may differ: defining it costs more than
// any script gains from it.)
const install = (obj, name, fn) => {
  obj[name] = fn;
  return fn;
};
const wrap = (obj, name, make) => install(obj, name, make(obj[name]));

// 1. Capabilities. The engine starts without require, process, timers,
// fetch or a filesystem; take away what could generate code, build values
// of unbounded cost in one native step (BigInt exponentiation, huge typed
// arrays), or recurse in Go on user-built chains (Proxy).
for (const name of ["eval", "BigInt", "ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics",
  "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array",
  "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
  "Proxy", "WeakRef", "FinalizationRegistry"]) {
  delete G[name];
}
const noCodegen = function Function() {
  throw new TypeErr("code generation from strings is disabled in the sandbox; write the code directly");
};
noCodegen.prototype = FP;
for (const proto of [FP, getPrototypeOf(async function () {}), getPrototypeOf(function* () {})]) {
  defineProperty(proto, "constructor", {value: noCodegen, writable: false, enumerable: false, configurable: false});
}
defineProperty(G, "Function", {value: noCodegen, writable: false, enumerable: false, configurable: false});

// 2a. Strings.
wrap(SP, "repeat", (orig) => ({repeat(count) {
  const s = S(coercible(this, "String.prototype.repeat"));
  const n = toInt(count);
  if (n > 0 && n !== Infinity) checkString(s.length * n, "a string");
  return apply(orig, s, [n]);
}}).repeat);
for (const name of ["padStart", "padEnd"]) {
  wrap(SP, name, (orig) => ({[name](maxLength, fill) {
    const s = S(coercible(this, "String.prototype." + name));
    const n = toLen(maxLength);
    if (n > s.length) checkString(n, "a string");
    return apply(orig, s, [n, fill]);
  }})[name]);
}
wrap(SP, "concat", (orig) => ({concat(...parts) {
  const s = S(coercible(this, "String.prototype.concat"));
  let n = s.length;
  for (let i = 0; i < parts.length; i++) {
    parts[i] = S(parts[i]);
    n += parts[i].length;
    checkString(n, "a string");
  }
  return apply(orig, s, parts);
}}).concat);

// substitute implements GetSubstitution (the $-patterns of replace).
const substitute = (repl, matched, position, str, caps, groups) => {
  let out = "", from = 0;
  for (let i = apply(strIndexOf, repl, ["$"]); i >= 0 && i + 1 < repl.length; i = apply(strIndexOf, repl, ["$", from])) {
    out += apply(strSlice, repl, [from, i]);
    const c = repl[i + 1];
    from = i + 2;
    if (c === "$") out += "$";
    else if (c === "&") out += matched;
    else if (c === "`") out += apply(strSlice, str, [0, position]);
    else if (c === "'") out += apply(strSlice, str, [min(position + matched.length, str.length)]);
    else if (c >= "0" && c <= "9") {
      let d = +c;
      const c2 = repl[i + 2];
      if (c2 >= "0" && c2 <= "9" && d * 10 + +c2 >= 1 && d * 10 + +c2 <= caps.length) { d = d * 10 + +c2; from++; }
      if (d >= 1 && d <= caps.length) { if (caps[d - 1] !== undefined) out += caps[d - 1]; }
      else { out += "$"; from = i + 1; }
    } else if (c === "<" && groups !== undefined) {
      const end = apply(strIndexOf, repl, [">", i + 2]);
      if (end < 0) { out += "$<"; }
      else { const v = groups[apply(strSlice, repl, [i + 2, end])]; if (v !== undefined) out += S(v); from = end + 1; }
    } else { out += "$"; from = i + 1; }
  }
  return out + apply(strSlice, repl, [from]);
};
// replace and replaceAll concatenate every replacement natively at the end,
// so "a".repeat(1e6).replace(/a/g, big) would build a string of 1e6 × big
// in one step. Count the replacements as they are produced instead.
for (const name of ["replace", "replaceAll"]) {
  wrap(SP, name, (orig) => ({[name](pattern, replacement) {
    const s = S(coercible(this, "String.prototype." + name));
    let total = s.length;
    const count = (r) => { total += r.length; checkString(total, "the result of " + name); return r; };
    if (typeof replacement === "function") {
      const fn = replacement;
      return apply(orig, s, [pattern, function (...m) { return count(S(apply(fn, undefined, m))); }]);
    }
    const repl = S(replacement);
    const dollars = apply(strIndexOf, repl, ["$"]) >= 0;
    if ((s.length + 1) * (repl.length + (dollars ? s.length : 0)) + s.length <= L.maxString) {
      return apply(orig, s, [pattern, repl]);
    }
    return apply(orig, s, [pattern, function (...m) {
      if (!dollars) return count(repl);
      let k = m.length - 1;
      const groups = typeof m[k] === "object" ? m[k--] : undefined;
      return count(substitute(repl, m[0], m[k - 1], m[k], apply(AP.slice, m, [1, k - 1]), groups));
    }]);
  }})[name]);
}
wrap(SP, "split", (orig) => ({split(separator, lim) {
  coercible(this, "String.prototype.split");
  const n = lim === undefined ? L.maxArray + 1 : min(lim >>> 0, L.maxArray + 1);
  const out = apply(orig, this, [separator, n]);
  if (out.length > L.maxArray) limit("an array of more than " + L.maxArray + " elements", L.maxArray + " elements");
  return out;
}}).split);
// match, matchAll and search compile a string argument as a pattern.
for (const name of ["match", "matchAll", "search"]) {
  wrap(SP, name, (orig) => ({[name](re) {
    if (typeof re === "string" && re.length > L.maxPattern) limit("a regular expression of " + re.length + " characters", L.maxPattern + " characters");
    return apply(orig, this, [re]);
  }})[name]);
}
const origRaw = S.raw;
install(S, "raw", ({raw(template, ...subs) {
  const r = O(O(template).raw);
  const n = toLen(r.length);
  let out = "";
  for (let i = 0; i < n; i++) {
    out += S(r[i]);
    if (i + 1 < n && i < subs.length) out += S(subs[i]);
    checkString(out.length, "a string");
  }
  return out;
}}).raw);

// 2b. Regular expressions. Patterns goja cannot give to Go's RE2 run on
// regexp2, whose match timeout (set by the host) makes a runaway match
// return "no match". Routing every match through exec lets a timed-out
// match throw instead of silently failing: replacing exec also turns off
// goja's native fast paths, so replace, split, match and test all call it.
const OrigRegExp = RegExp;
wrap(OrigRegExp.prototype, "exec", (orig) => ({exec(s) {
  const t0 = dateNow();
  const r = apply(orig, this, [s]);
  if (r === null && dateNow() - t0 >= L.regexpTimeoutMs) {
    throw new RangeErr("a regular expression ran for more than " + L.regexpTimeoutMs +
      " ms (catastrophic backtracking?); simplify the pattern or the input");
  }
  return r;
}}).exec);
// goja's test does not go through exec.
wrap(OrigRegExp.prototype, "test", (orig) => ({test(s) {
  const t0 = dateNow();
  const r = apply(orig, this, [s]);
  if (!r && dateNow() - t0 >= L.regexpTimeoutMs) {
    throw new RangeErr("a regular expression ran for more than " + L.regexpTimeoutMs +
      " ms (catastrophic backtracking?); simplify the pattern or the input");
  }
  return r;
}}).test);
const RegExpCapped = function RegExp(pattern, flags) {
  const src = pattern instanceof OrigRegExp ? pattern.source : (pattern === undefined ? "" : S(pattern));
  if (src.length > L.maxPattern) limit("a regular expression of " + src.length + " characters", L.maxPattern + " characters");
  if (new.target === undefined) return apply(OrigRegExp, undefined, [pattern, flags]);
  return construct(OrigRegExp, [pattern, flags], new.target === RegExpCapped ? OrigRegExp : new.target);
};
for (const key of R.ownKeys(OrigRegExp)) {
  if (key !== "prototype" && key !== "name" && key !== "length") {
    defineProperty(RegExpCapped, key, getOwnPropertyDescriptor(OrigRegExp, key));
  }
}
RegExpCapped.prototype = OrigRegExp.prototype;
defineProperty(OrigRegExp.prototype, "constructor", {value: RegExpCapped, writable: true, enumerable: false, configurable: true});
defineProperty(G, "RegExp", {value: RegExpCapped, writable: true, enumerable: false, configurable: true});

// 2c. Arrays. A sparse array may claim any length up to 2^32-1, and most
// array methods walk (or allocate) that length in Go: `[...a]`,
// `a.fill(0)` and `a.join()` would each run for minutes or exhaust memory
// without a chance to interrupt them. Every walking method checks the
// length first. push, pop and at are O(1) and stay native.
for (const name of ["copyWithin", "every", "fill", "filter", "find", "findIndex", "findLast",
  "findLastIndex", "flatMap", "forEach", "includes", "indexOf", "lastIndexOf", "map", "reduce",
  "reduceRight", "reverse", "shift", "slice", "some", "sort", "splice", "toLocaleString",
  "toReversed", "toSorted", "toSpliced", "unshift", "with", "keys", "entries"]) {
  if (typeof AP[name] === "function") {
    wrap(AP, name, (orig) => ({[name](...args) {
      if (this !== null && this !== undefined) arrayLen(O(this));
      return apply(orig, this, args);
    }})[name]);
  }
}
const origValues = AP.values;
const values = wrap(AP, "values", (orig) => ({values() {
  if (this !== null && this !== undefined) arrayLen(O(this));
  return apply(orig, this, NOARGS);
}}).values);
defineProperty(AP, iterSym, {value: values, writable: true, enumerable: false, configurable: true});
// Every arguments object carries the original values function, which
// iterates any array-like without the check above; a JS step in every
// array iterator's next keeps such a loop interruptible and visible to the
// memory watchdog.
wrap(getPrototypeOf(apply(origValues, [], [])), "next", (orig) => ({next() { return apply(orig, this, NOARGS); }}).next);
// join: the host builds the string in one pass with the cap checked as it
// grows, reading each element once (a getter cannot return a small value
// to a size check and a big one to the join). Elements that are objects
// convert through their JS toString, so nested arrays recurse in JS, where
// the call-stack limit applies.
install(AP, "join", ({join(separator) {
  const o = O(coercible(this, "Array.prototype.join"));
  const n = arrayLen(o);
  return host.join(o, n, separator === undefined ? "," : S(separator), L.maxString);
}}).join);
const spreadable = (e) => {
  if (e === null || (typeof e !== "object" && typeof e !== "function")) return false;
  const s = e[spreadSym];
  return s !== undefined ? !!s : isArray(e);
};
wrap(AP, "concat", (orig) => ({concat(...items) {
  const o = O(coercible(this, "Array.prototype.concat"));
  let n = spreadable(o) ? arrayLen(o) : 1;
  for (let i = 0; i < items.length; i++) {
    n += spreadable(items[i]) ? toLen(items[i].length) : 1;
    if (n > L.maxArray) limit("an array of " + n + " elements", L.maxArray + " elements");
  }
  return apply(orig, this, items);
}}).concat);
// flat recurses in Go over the nesting depth; this one recurses in JS.
install(AP, "flat", ({flat(depth) {
  const src = O(coercible(this, "Array.prototype.flat"));
  const out = [];
  let n = 0;
  const walk = (a, len, d) => {
    for (let i = 0; i < len; i++) {
      if (!(i in a)) continue;
      const e = a[i];
      if (d > 0 && isArray(e)) { walk(e, arrayLen(e), d - 1); continue; }
      if (++n > L.maxArray) limit("an array of " + n + " elements", L.maxArray + " elements");
      out[n - 1] = e;
    }
  };
  walk(src, arrayLen(src), depth === undefined ? 1 : toInt(depth));
  return out;
}}).flat);
wrap(A, "from", (orig) => ({from(items, mapFn, thisArg) {
  if (items !== null && items !== undefined && items[iterSym] == null) arrayLen(O(items));
  return apply(orig, this, [items, mapFn, thisArg]);
}}).from);

// 2d. Functions. apply and Reflect.apply/construct copy an array-like of
// any claimed length into an argument list; bound-function chains recurse
// in Go when called.
const argsLen = (a) => { if (a !== null && a !== undefined) arrayLen(O(a)); };
wrap(FP, "apply", () => ({apply(thisArg, args) {
  if (typeof this !== "function") throw new TypeErr("Function.prototype.apply called on a non-function");
  if (args === null || args === undefined) return apply(this, thisArg, []);
  argsLen(args);
  return apply(this, thisArg, args);
}}).apply);
wrap(R, "apply", () => ({apply(fn, thisArg, args) { argsLen(args); return apply(fn, thisArg, args); }}).apply);
wrap(R, "construct", () => ({construct(fn, args, ...rest) { argsLen(args); return construct(fn, args, ...rest); }}).construct);
const bindDepth = new WeakMap();
wrap(FP, "bind", (orig) => ({bind(...args) {
  const d = (apply(wmGet, bindDepth, [this]) || 0) + 1;
  if (d > L.maxBind) limit("a chain of " + d + " bound functions", L.maxBind);
  const f = apply(orig, this, args);
  apply(wmSet, bindDepth, [f, d]);
  return f;
}}).bind);

// 2e. JSON. The native stringify loops in Go, so a DAG of shared references
// (x = [x, x] thirty times) would expand to 2^30 copies in one step. The
// host's encoder (Go) caps size and depth at native speed; with a function
// replacer, a wrapping replacer runs in JS for every value instead, which
// makes stringify interruptible and lets it count as it goes.
const boxed = (v) => {
  const t = apply(objToString, v, []);
  return t === "[object Number]" || t === "[object String]" || t === "[object Boolean]";
};
// allowList turns an array replacer into its property list.
const allowList = (replacer) => {
  const seen = new SetCtor();
  const order = [];
  for (let i = 0; i < replacer.length; i++) {
    const k = replacer[i];
    const key = typeof k === "string" ? k : (typeof k === "number" || (k !== null && typeof k === "object" && boxed(k) && typeof k.valueOf() !== "boolean")) ? S(k) : undefined;
    if (key !== undefined && !apply(setHas, seen, [key])) { apply(setAdd, seen, [key]); order[order.length] = key; }
  }
  return order;
};
// stringifyCapped runs the native stringify with a function replacer,
// wrapped so that it counts the output and the depth.
const stringifyCapped = (value, fn, space, cap) => {
  let gap = 0;
  if (typeof space === "number" || (space !== null && typeof space === "object" && apply(objToString, space, []) === "[object Number]")) gap = min(10, toInt(space));
  else if (typeof space === "string" || (space !== null && typeof space === "object" && apply(objToString, space, []) === "[object String]")) gap = min(10, S(space).length);
  const path = [];
  let size = 0;
  return apply(origStringify, JSON, [value, function (key, v) {
    v = apply(fn, this, [key, v]);
    while (path.length > 0 && path[path.length - 1] !== this) path.length--;
    if (path.length >= L.maxDepth) limit("JSON nesting deeper than " + path.length, L.maxDepth + " levels");
    if (v !== null && typeof v === "object" && !boxed(v)) {
      path[path.length] = v;
      size += 2;
    } else if (typeof v === "string") size += v.length + 2;
    else size += 8;
    size += key.length + 4 + gap * path.length;
    if (size > cap) limit("JSON text of more than " + cap + " characters", cap + " characters");
    return v;
  }, space]);
};
// Without a replacer the host's capped encoder (Go) does the work at
// native speed.
install(JSON, "stringify", ({stringify(value, replacer, space) {
  if (typeof replacer === "function") return stringifyCapped(value, replacer, space, L.maxString);
  return host.stringify(value, space, L.maxString, isArray(replacer) ? allowList(replacer) : undefined);
}}).stringify);
install(JSON, "parse", ({parse(text, reviver) {
  const s = S(text);
  const d = host.jsonDepth(s);
  if (d > L.maxDepth) limit("JSON nesting of " + d + " levels", L.maxDepth + " levels");
  return apply(origParse, JSON, [s, reviver]);
}}).parse);

// 3. console and the bridge entry point.
const show = (v) => {
  if (typeof v === "string") return v;
  if (typeof v === "function") return "[Function " + (v.name || "anonymous") + "]";
  if (typeof v === "symbol" || typeof v !== "object" || v === null) return S(v);
  if (v instanceof Error) return S(v.stack || v);
  try {
    const s = host.stringify(v, undefined, L.maxLog);
    return s === undefined ? S(v) : s;
  } catch (e) {
    try { return S(v); } catch (e2) { return "[object]"; }
  }
};
const logger = (level) => ({[level](...args) {
  let line = "";
  for (let i = 0; i < args.length && line.length <= L.maxLog; i++) line += (i > 0 ? " " : "") + show(args[i]);
  host.log(level, line);
}})[level];
defineProperty(G, "console", {value: {
  log: logger("log"), info: logger("info"), warn: logger("warn"), error: logger("error"),
  debug: logger("debug"), trace: logger("debug"), dir: logger("log"), table: logger("log"),
}, writable: true, enumerable: false, configurable: true});

const call = host.call;
defineProperty(G, "__kiln_call", {value: ({__kiln_call(backend, tool, args) {
  if (args === undefined || args === null) args = {};
  else if (typeof args !== "object" || isArray(args)) {
    throw new TypeErr(S(backend) + "." + S(tool) + " takes one object of named arguments, such as {query: \"…\"}; got " +
      (isArray(args) ? "an array" : typeof args));
  }
  const json = host.stringify(args, undefined, L.maxArgs);
  return call(S(backend), S(tool), json === undefined ? "{}" : json);
}}).__kiln_call, writable: false, enumerable: false, configurable: false});

// 4. Freeze Object.prototype, so no script can add properties every object
// inherits (the bridge's objects are frozen by the preamble). Other
// intrinsics stay writable: each run has its own runtime, the caps hold
// their originals in this closure, and freezing a builtin prototype costs
// a copy of all its lazily created properties on every run.
freeze(O.prototype);

return freeze({
  parse: origParse,
  describe: (e) => {
    try {
      if (e instanceof Error) return {header: S(e.name) + ": " + S(e.message), stack: typeof e.stack === "string" ? e.stack : ""};
      return {header: show(e), stack: ""};
    } catch (x) {
      return {header: "exception (it could not be described)", stack: ""};
    }
  },
});
})
