//! The C ABI of the path-family kernel (`crate::paths`), wrapped by
//! `aspen.engine.native.NativePaths`. Same conventions as the `aspen_core_*` functions:
//! counts ≥ 0 or an error code; a failed mutation poisons the kernel.
#![allow(clippy::missing_safety_doc)]

use crate::cudd::{BinFn, Cudd, DerefFn, LeqFn, LeqUnlessFn, Node, RefFn, SupportFn};
use crate::paths::Paths;
use crate::table::FastMap;
use crate::{guarded, Poisonable, ERR_ARGUMENT, ERR_MEMORY};
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

impl Poisonable for Paths {
    fn poisoned(&mut self) -> &mut bool {
        &mut self.poisoned
    }
}

fn with_paths(
    handle: *mut Paths,
    mutating: bool,
    body: impl FnOnce(&mut Paths) -> Result<i64, i64>,
) -> i64 {
    guarded(handle, mutating, body)
}

/// A new path kernel over CUDD manager `manager`; NULL when a function pointer is missing.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_new(
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
) -> *mut Paths {
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
        Some(cudd) => Box::into_raw(Box::new(Paths::new(cudd))),
        None => ptr::null_mut(),
    }
}

/// Release every reference and free the kernel.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_free(handle: *mut Paths) {
    if !handle.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(handle) })));
    }
}

/// OR `nodes[i]` into link (`srcs[i]`, `dsts[i]`, `costs[i]`) for each i < n, queueing the
/// derivations; returns the links that changed.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_add_links(
    handle: *mut Paths,
    n: i64,
    srcs: *const u32,
    dsts: *const u32,
    costs: *const f64,
    nodes: *const Node,
) -> i64 {
    with_paths(handle, true, |core| {
        if n < 0 || (n > 0 && (srcs.is_null() || dsts.is_null() || costs.is_null())) {
            return Err(ERR_ARGUMENT);
        }
        if n > 0 && nodes.is_null() {
            return Err(ERR_ARGUMENT);
        }
        let mut changed = 0;
        for i in 0..n as usize {
            let (x, z, cost, node) =
                unsafe { (*srcs.add(i), *dsts.add(i), *costs.add(i), *nodes.add(i)) };
            if node.is_null() || cost.is_nan() {
                return Err(ERR_ARGUMENT);
            }
            if core.add_link(x, z, cost, node).map_err(|_| ERR_MEMORY)? {
                changed += 1;
            }
        }
        Ok(changed)
    })
}

/// Run to quiescence and index what changed; returns the derivations processed.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_run(handle: *mut Paths) -> i64 {
    with_paths(handle, true, |core| core.run().map_err(|_| ERR_MEMORY))
}

/// Bring the deletion index up to date; returns the entries indexed.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_index(handle: *mut Paths) -> i64 {
    with_paths(handle, true, |core| core.index().map_err(|_| ERR_MEMORY))
}

/// Set the variables of CUDD indices `dead[0..n]` to false (`cube`: the conjunction of their
/// negations) everywhere; returns the tuples changed.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_delete(
    handle: *mut Paths,
    dead: *const c_int,
    n: i64,
    cube: Node,
) -> i64 {
    with_paths(handle, true, |core| {
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

/// How many: groups (`what` 0), links (1), path cells (2), tuples (3), best rows of every
/// group (4), rows recorded in the journal (5), best rows now of the journal's groups (6).
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_len(handle: *mut Paths, what: c_int) -> i64 {
    with_paths(handle, false, |core| {
        Ok(match what {
            0 => core.group_count(),
            1 => core.link_count(),
            2 => core.cells().len(),
            3 => core.tuple_count(),
            4 => core.row_count(0),
            5 => core.row_count(1),
            6 => core.row_count(2),
            _ => return Err(ERR_ARGUMENT),
        } as i64)
    })
}

/// Write up to `cap` best rows (`which`: 0 every group's, 1 the journal's record, 2 the
/// journal's groups now): group pair, path id, cost, hops, flags (1 cost best, 2 hops best)
/// and formula (not referenced; NULL for the journal's record). Returns how many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_rows(
    handle: *mut Paths,
    which: c_int,
    pairs: *mut u64,
    paths: *mut u32,
    costs: *mut f64,
    hops: *mut u32,
    flags: *mut u8,
    nodes: *mut Node,
    cap: i64,
) -> i64 {
    with_paths(handle, false, |core| {
        if cap < 0
            || (cap > 0
                && (pairs.is_null()
                    || paths.is_null()
                    || costs.is_null()
                    || hops.is_null()
                    || flags.is_null()
                    || nodes.is_null()))
        {
            return Err(ERR_ARGUMENT);
        }
        let cap = cap as usize;
        let mut written = 0usize;
        core.each_row(which, |r| {
            if written == cap {
                return false;
            }
            unsafe {
                *pairs.add(written) = r.pair;
                *paths.add(written) = r.path;
                *costs.add(written) = r.cost;
                *hops.add(written) = r.hops;
                *flags.add(written) = r.flags;
                *nodes.add(written) = r.node;
            }
            written += 1;
            true
        });
        Ok(written as i64)
    })
}

/// Write the path cells `start..start + cap` (head node, tail cell or u32::MAX); returns how
/// many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_cells(
    handle: *mut Paths,
    start: i64,
    heads: *mut u32,
    tails: *mut u32,
    cap: i64,
) -> i64 {
    with_paths(handle, false, |core| {
        if start < 0 || cap < 0 || (cap > 0 && (heads.is_null() || tails.is_null())) {
            return Err(ERR_ARGUMENT);
        }
        let cells = core.cells();
        let mut written = 0usize;
        for &(head, tail) in cells.iter().skip(start as usize).take(cap as usize) {
            unsafe {
                *heads.add(written) = head;
                *tails.add(written) = tail;
            }
            written += 1;
        }
        Ok(written as i64)
    })
}

/// Write up to `cap` live links (src, dst, cost, formula not referenced); returns how many.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_links(
    handle: *mut Paths,
    srcs: *mut u32,
    dsts: *mut u32,
    costs: *mut f64,
    nodes: *mut Node,
    cap: i64,
) -> i64 {
    with_paths(handle, false, |core| {
        if cap < 0
            || (cap > 0 && (srcs.is_null() || dsts.is_null() || costs.is_null() || nodes.is_null()))
        {
            return Err(ERR_ARGUMENT);
        }
        let mut written = 0usize;
        for (x, z, cost, node) in core.link_items().take(cap as usize) {
            unsafe {
                *srcs.add(written) = x;
                *dsts.add(written) = z;
                *costs.add(written) = cost;
                *nodes.add(written) = node;
            }
            written += 1;
        }
        Ok(written as i64)
    })
}

/// Start (`on` ≠ 0: a fresh journal) or stop recording the groups whose bests may change.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_track(handle: *mut Paths, on: c_int) -> i64 {
    with_paths(handle, false, |core| {
        core.journal = if on != 0 {
            Some(FastMap::default())
        } else {
            None
        };
        Ok(0)
    })
}

/// Counters into `out[0..n]`: derivations, absorbed, restricted, groups, tuples, links,
/// links_restricted, indexed, pending, failed, promoted, cells. Returns how many were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_stats(handle: *mut Paths, out: *mut i64, n: i64) -> i64 {
    with_paths(handle, false, |core| {
        if out.is_null() || n < 0 {
            return Err(ERR_ARGUMENT);
        }
        let s = core.stats;
        let values = [
            s.derivations,
            s.absorbed,
            s.restricted,
            core.group_count() as i64,
            core.tuple_count() as i64,
            core.link_count() as i64,
            s.links_restricted,
            s.indexed,
            core.waiting() as i64,
            core.poisoned as i64,
            s.promoted,
            core.cells().len() as i64,
        ];
        let count = values.len().min(n as usize);
        for (i, v) in values.iter().take(count).enumerate() {
            unsafe { *out.add(i) = *v };
        }
        Ok(count as i64)
    })
}

/// Write up to `cap` groups' minima (`hops` ≠ 0: fewest hops, else cheapest cost): pair,
/// value, and the OR of the tied tuples' formulas (held by the kernel until the group changes,
/// not referenced for the caller: wrap them before any other CUDD call). Returns how many
/// were written.
#[no_mangle]
pub unsafe extern "C" fn aspen_paths_minima(
    handle: *mut Paths,
    hops: c_int,
    pairs: *mut u64,
    values: *mut f64,
    nodes: *mut Node,
    cap: i64,
) -> i64 {
    // not a mutation: a failed read leaves every cached OR either built or NULL
    with_paths(handle, false, |core| {
        if cap < 0 || (cap > 0 && (pairs.is_null() || values.is_null() || nodes.is_null())) {
            return Err(ERR_ARGUMENT);
        }
        let mut rows = Vec::new();
        core.minima(hops != 0, &mut rows).map_err(|_| ERR_MEMORY)?;
        let mut written = 0usize;
        for &(pair, value, node) in rows.iter().take(cap as usize) {
            unsafe {
                *pairs.add(written) = pair;
                *values.add(written) = value;
                *nodes.add(written) = node;
            }
            written += 1;
        }
        Ok(written as i64)
    })
}
