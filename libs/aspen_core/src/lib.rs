//! Aspen's compiled core: the recursive view `reachable` (`kernel`; in targets mode also the
//! region family's closure) and the path family (`paths`, its C ABI in `paths_abi`) with
//! absorption provenance, over the
//! CUDD manager of a `dd.cudd` BDD, behind a C ABI loaded with ctypes
//! (`aspen.engine.native`). Std only; the CUDD functions come in as pointers bound by Python
//! from the loaded `dd.cudd` extension, so no CUDD header or library is linked here.
//!
//! Return codes of the `i64` functions: a count (≥ 0) on success, or
//! `ERR_MEMORY` (CUDD returned NULL), `ERR_ARGUMENT` (a NULL handle or array),
//! `ERR_POISONED` (an earlier call failed mid-way: the closure may be incomplete),
//! `ERR_PANIC` (a bug: the state is poisoned).
//!
//! # Safety
//!
//! Every exported function is `unsafe`: `handle` must come from `aspen_core_new` and not be
//! freed yet, arrays must hold the counts given, node pointers must be live nodes of the
//! kernel's manager, and calls on one handle (and its manager) must not run concurrently.
#![allow(clippy::missing_safety_doc)]

mod cudd;
mod kernel;
mod paths;
mod paths_abi;
mod table;

use crate::cudd::{BinFn, Cudd, DerefFn, LeqFn, LeqUnlessFn, Node, RefFn, SupportFn};
use crate::kernel::Core;
use crate::table::FastMap;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

pub const ERR_MEMORY: i64 = -1;
pub const ERR_ARGUMENT: i64 = -2;
pub const ERR_POISONED: i64 = -3;
pub const ERR_PANIC: i64 = -4;

/// A kernel behind a handle: a failed mutation poisons it (its state is then unknown).
pub(crate) trait Poisonable {
    fn poisoned(&mut self) -> &mut bool;
}

impl Poisonable for Core {
    fn poisoned(&mut self) -> &mut bool {
        &mut self.poisoned
    }
}

/// Run `body` on the kernel behind `handle`; errors become codes, a failure poisons it.
pub(crate) fn guarded<K: Poisonable>(
    handle: *mut K,
    mutating: bool,
    body: impl FnOnce(&mut K) -> Result<i64, i64>,
) -> i64 {
    if handle.is_null() {
        return ERR_ARGUMENT;
    }
    let kernel = unsafe { &mut *handle };
    if mutating && *kernel.poisoned() {
        return ERR_POISONED;
    }
    match catch_unwind(AssertUnwindSafe(|| body(kernel))) {
        Ok(Ok(value)) => value,
        Ok(Err(code)) => {
            if mutating && code == ERR_MEMORY {
                *kernel.poisoned() = true;
            }
            code
        }
        Err(_) => {
            *kernel.poisoned() = true;
            ERR_PANIC
        }
    }
}

fn with_core(
    handle: *mut Core,
    mutating: bool,
    body: impl FnOnce(&mut Core) -> Result<i64, i64>,
) -> i64 {
    guarded(handle, mutating, body)
}

/// A new kernel over CUDD manager `manager`; NULL when a function pointer is missing.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_new(
    manager: *mut c_void,
    and_fn: Option<BinFn>,
    or_fn: Option<BinFn>,
    leq_fn: Option<LeqFn>,
    leq_unless_fn: Option<LeqUnlessFn>,
    cofactor_fn: Option<BinFn>,
    ref_fn: Option<RefFn>,
    deref_fn: Option<DerefFn>,
    support_fn: Option<SupportFn>,
    zero: Node,
) -> *mut Core {
    // a plain match, not let-else: Debian 12's rustc (1.63) builds this crate
    match Cudd::bind(
        manager,
        and_fn,
        or_fn,
        leq_fn,
        leq_unless_fn,
        cofactor_fn,
        ref_fn,
        deref_fn,
        support_fn,
        zero,
    ) {
        Some(cudd) => Box::into_raw(Box::new(Core::new(cudd))),
        None => ptr::null_mut(),
    }
}

/// Release every reference and free the kernel.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_free(handle: *mut Core) {
    if !handle.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(handle) })));
    }
}

/// OR `nodes[i]` into link `keys[i]` for each i < n; returns the links that changed.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_add_links(
    handle: *mut Core,
    n: i64,
    keys: *const u64,
    nodes: *const Node,
) -> i64 {
    with_core(handle, true, |core| {
        if n < 0 || (n > 0 && (keys.is_null() || nodes.is_null())) {
            return Err(ERR_ARGUMENT);
        }
        let (keys, nodes) = if n == 0 {
            (&[][..], &[][..])
        } else {
            unsafe {
                (
                    std::slice::from_raw_parts(keys, n as usize),
                    std::slice::from_raw_parts(nodes, n as usize),
                )
            }
        };
        let mut changed = 0;
        for (&key, &node) in keys.iter().zip(nodes) {
            if core.add_link(key, node).map_err(|_| ERR_MEMORY)? {
                changed += 1;
            }
        }
        Ok(changed)
    })
}

/// Replace entries `keys[i]` of the closure (`links` ≠ 0: of the links) by `nodes[i]` (not
/// false) for each i < n, deriving nothing (a state restore). Returns n, or an error code
/// (a false or NULL formula: nothing after it is set).
#[no_mangle]
pub unsafe extern "C" fn aspen_core_set(
    handle: *mut Core,
    links: c_int,
    n: i64,
    keys: *const u64,
    nodes: *const Node,
) -> i64 {
    with_core(handle, true, |core| {
        if n < 0 || (n > 0 && (keys.is_null() || nodes.is_null())) {
            return Err(ERR_ARGUMENT);
        }
        if n == 0 {
            return Ok(0);
        }
        let (keys, nodes) = unsafe {
            (
                std::slice::from_raw_parts(keys, n as usize),
                std::slice::from_raw_parts(nodes, n as usize),
            )
        };
        for (&key, &node) in keys.iter().zip(nodes) {
            if node.is_null() || node == core.cudd.zero {
                return Err(ERR_ARGUMENT);
            }
            core.set(links != 0, key, node);
        }
        Ok(n)
    })
}

/// Mark the node ids `ids[0..n]` as targets (n may be 0): from now on only closure entries
/// whose destination is a target are derived (targets mode; a region view's closure).
/// Returns n.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_targets(handle: *mut Core, n: i64, ids: *const u32) -> i64 {
    with_core(handle, true, |core| {
        if n < 0 || (n > 0 && ids.is_null()) {
            return Err(ERR_ARGUMENT);
        }
        let ids = if n == 0 {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(ids, n as usize) }
        };
        core.add_targets(ids); // none: targets mode on, with no target yet
        Ok(n)
    })
}

/// Run to quiescence and index the entries changed; returns the derivations processed.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_run(handle: *mut Core) -> i64 {
    with_core(handle, true, |core| core.run().map_err(|_| ERR_MEMORY))
}

/// Lazy (`on` ≠ 0) or eager mode for the derivations to come: lazy buffers the alternatives
/// of an entry that is neither new nor waiting (a lazy MinShip in front of each entry);
/// switching to eager leaves the buffers held until `aspen_core_flush`. Returns 0.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_set_lazy(handle: *mut Core, on: c_int) -> i64 {
    with_core(handle, true, |core| {
        core.state.lazy = on != 0;
        Ok(0)
    })
}

/// Ship every buffered alternative and run eagerly to quiescence (the formulas are then the
/// full provenance); returns the derivations processed.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_flush(handle: *mut Core) -> i64 {
    with_core(handle, true, |core| core.flush().map_err(|_| ERR_MEMORY))
}

/// The number of closure entries holding a buffered alternative.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_alternatives(handle: *mut Core) -> i64 {
    with_core(handle, false, |core| Ok(core.state.alternatives as i64))
}

/// Write up to `cap` closure entries holding a buffer: their keys and (when `nodes` is not
/// NULL) their buffers, not referenced. Returns how many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_buffered(
    handle: *mut Core,
    keys: *mut u64,
    nodes: *mut Node,
    cap: i64,
) -> i64 {
    with_core(handle, false, |core| {
        if cap < 0 || (cap > 0 && keys.is_null()) {
            return Err(ERR_ARGUMENT);
        }
        let mut written = 0usize;
        let held = core.state.closure.live().filter(|e| !e.buffer.is_null());
        for e in held.take(cap as usize) {
            unsafe {
                *keys.add(written) = e.key;
                if !nodes.is_null() {
                    *nodes.add(written) = e.buffer;
                }
            }
            written += 1;
        }
        Ok(written as i64)
    })
}

/// Bring the deletion index up to date; returns the entries indexed.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_index(handle: *mut Core) -> i64 {
    with_core(handle, true, |core| core.index().map_err(|_| ERR_MEMORY))
}

/// Set the variables of CUDD indices `dead[0..n]` to false (`cube`: the conjunction of their
/// negations) everywhere; returns the closure entries changed.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_delete(
    handle: *mut Core,
    dead: *const c_int,
    n: i64,
    cube: Node,
) -> i64 {
    with_core(handle, true, |core| {
        if n < 0 || (n > 0 && dead.is_null()) || cube.is_null() {
            return Err(ERR_ARGUMENT);
        }
        if n == 0 {
            return Ok(0);
        }
        let dead: Vec<u32> = unsafe { std::slice::from_raw_parts(dead, n as usize) }
            .iter()
            .filter(|&&v| v >= 0)
            .map(|&v| v as u32)
            .collect();
        core.delete(&dead, cube).map_err(|_| ERR_MEMORY)
    })
}

/// The number of closure entries (`links` ≠ 0: links).
#[no_mangle]
pub unsafe extern "C" fn aspen_core_len(handle: *mut Core, links: c_int) -> i64 {
    with_core(handle, false, |core| {
        Ok(if links != 0 {
            core.links.len()
        } else {
            core.state.closure.len()
        } as i64)
    })
}

/// The formula of `key` (not referenced: wrap it before any other CUDD call), NULL if absent.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_get(handle: *mut Core, links: c_int, key: u64) -> Node {
    if handle.is_null() {
        return ptr::null_mut();
    }
    let core = unsafe { &*handle };
    let table = if links != 0 {
        &core.links
    } else {
        &core.state.closure
    };
    match table.find(key) {
        Some(slot) => table.slots[slot as usize].node,
        None => ptr::null_mut(),
    }
}

/// Write up to `cap` entries' keys (and, when `nodes` is not NULL, their formulas, not
/// referenced) into the arrays; returns how many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_items(
    handle: *mut Core,
    links: c_int,
    keys: *mut u64,
    nodes: *mut Node,
    cap: i64,
) -> i64 {
    with_core(handle, false, |core| {
        if cap < 0 || (cap > 0 && keys.is_null()) {
            return Err(ERR_ARGUMENT);
        }
        let table = if links != 0 {
            &core.links
        } else {
            &core.state.closure
        };
        let mut written = 0usize;
        for e in table.live().take(cap as usize) {
            unsafe {
                *keys.add(written) = e.key;
                if !nodes.is_null() {
                    *nodes.add(written) = e.node;
                }
            }
            written += 1;
        }
        Ok(written as i64)
    })
}

/// Start (`on` ≠ 0) or stop recording the closure keys that enter or leave.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_track(handle: *mut Core, on: c_int) -> i64 {
    with_core(handle, false, |core| {
        core.state.journal = if on != 0 {
            Some(FastMap::default())
        } else {
            None
        };
        Ok(0)
    })
}

/// The number of keys recorded since tracking started.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_journal_len(handle: *mut Core) -> i64 {
    with_core(handle, false, |core| {
        Ok(core.state.journal.as_ref().map_or(0, |j| j.len()) as i64)
    })
}

/// Write up to `cap` recorded keys with whether each was present when tracking started, and
/// stop tracking; returns how many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_take_journal(
    handle: *mut Core,
    keys: *mut u64,
    present: *mut u8,
    cap: i64,
) -> i64 {
    with_core(handle, false, |core| {
        let journal = core.state.journal.take().unwrap_or_default();
        if cap < 0 || (cap > 0 && (keys.is_null() || present.is_null())) {
            return Err(ERR_ARGUMENT);
        }
        let mut written = 0usize;
        for (&key, &was) in journal.iter().take(cap as usize) {
            unsafe {
                *keys.add(written) = key;
                *present.add(written) = was as u8;
            }
            written += 1;
        }
        Ok(written as i64)
    })
}

/// Counters into `out[0..n]`: derivations, absorbed, restricted, entries, links,
/// links_restricted, indexed, pending, poisoned, buffered, shipped, alternatives. Returns how
/// many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_core_stats(handle: *mut Core, out: *mut i64, n: i64) -> i64 {
    with_core(handle, false, |core| {
        if out.is_null() || n < 0 {
            return Err(ERR_ARGUMENT);
        }
        let s = core.state.stats;
        let values = [
            s.derivations,
            s.absorbed,
            s.restricted,
            core.state.closure.len() as i64,
            core.links.len() as i64,
            s.links_restricted,
            s.indexed,
            core.waiting() as i64,
            core.poisoned as i64,
            s.buffered,
            s.shipped,
            core.state.alternatives as i64,
        ];
        let count = values.len().min(n as usize);
        for (i, v) in values.iter().take(count).enumerate() {
            unsafe { *out.add(i) = *v };
        }
        Ok(count as i64)
    })
}
