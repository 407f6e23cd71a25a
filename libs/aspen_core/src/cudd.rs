//! The CUDD functions the kernel calls, bound by pointer from the loaded `dd.cudd` extension.
//!
//! Reference discipline: every function returning a node references it before returning
//! (CUDD may garbage-collect unreferenced nodes in its next call); a NULL result (out of
//! memory) is an `Err(Oom)`, never dereferenced.

use std::os::raw::{c_int, c_void};
use std::ptr;

/// A `DdNode *` (complemented when its low bit is set); opaque here.
pub type Node = *mut c_void;

pub type BinFn = unsafe extern "C" fn(*mut c_void, Node, Node) -> Node;
pub type LeqFn = unsafe extern "C" fn(*mut c_void, Node, Node) -> c_int;
pub type LeqUnlessFn = unsafe extern "C" fn(*mut c_void, Node, Node, Node) -> c_int;
pub type RefFn = unsafe extern "C" fn(Node);
pub type DerefFn = unsafe extern "C" fn(*mut c_void, Node);
pub type SupportFn = unsafe extern "C" fn(*mut c_void, Node, *mut *mut c_int) -> c_int;

extern "C" {
    fn free(p: *mut c_void);
}

/// The complement of `node` (CUDD's complement bit: no call, no new node).
#[inline]
pub fn not(node: Node) -> Node {
    (node as usize ^ 1) as Node
}

/// CUDD returned NULL: out of memory (or a CUDD limit was hit).
#[derive(Debug, Clone, Copy)]
pub struct Oom;

/// One CUDD manager and the functions bound from its library.
#[derive(Clone, Copy)]
pub struct Cudd {
    pub mgr: *mut c_void,
    pub and_fn: BinFn,
    pub or_fn: BinFn,
    pub leq_fn: LeqFn,
    pub leq_unless_fn: LeqUnlessFn,
    pub cofactor_fn: BinFn,
    pub ref_fn: RefFn,
    pub deref_fn: DerefFn,
    pub support_fn: SupportFn,
    /// The constant false node (never stored).
    pub zero: Node,
}

impl Cudd {
    /// The binding of manager `mgr` from the function pointers Python passes; None when one is
    /// missing or the manager or the false node is NULL.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        mgr: *mut c_void,
        and_fn: Option<BinFn>,
        or_fn: Option<BinFn>,
        leq_fn: Option<LeqFn>,
        leq_unless_fn: Option<LeqUnlessFn>,
        cofactor_fn: Option<BinFn>,
        ref_fn: Option<RefFn>,
        deref_fn: Option<DerefFn>,
        support_fn: Option<SupportFn>,
        zero: Node,
    ) -> Option<Cudd> {
        if mgr.is_null() || zero.is_null() {
            return None;
        }
        // a plain match, not let-else: Debian 12's rustc (1.63) builds this crate
        match (and_fn, or_fn, leq_fn, leq_unless_fn, cofactor_fn, ref_fn, deref_fn, support_fn) {
            (Some(a), Some(o), Some(l), Some(u), Some(c), Some(r), Some(d), Some(s)) => Some(Cudd {
                mgr,
                and_fn: a,
                or_fn: o,
                leq_fn: l,
                leq_unless_fn: u,
                cofactor_fn: c,
                ref_fn: r,
                deref_fn: d,
                support_fn: s,
                zero,
            }),
            _ => None,
        }
    }

    #[inline]
    fn keep(&self, node: Node) -> Result<Node, Oom> {
        if node.is_null() {
            return Err(Oom);
        }
        unsafe { (self.ref_fn)(node) };
        Ok(node)
    }

    /// `a ∧ b`, referenced.
    #[inline]
    pub fn and(&self, a: Node, b: Node) -> Result<Node, Oom> {
        self.keep(unsafe { (self.and_fn)(self.mgr, a, b) })
    }

    /// `a ∨ b`, referenced.
    #[inline]
    pub fn or(&self, a: Node, b: Node) -> Result<Node, Oom> {
        self.keep(unsafe { (self.or_fn)(self.mgr, a, b) })
    }

    /// `f` cofactored by `cube` (the dead variables set to false), referenced.
    #[inline]
    pub fn cofactor(&self, f: Node, cube: Node) -> Result<Node, Oom> {
        self.keep(unsafe { (self.cofactor_fn)(self.mgr, f, cube) })
    }

    /// Whether `a` implies `b` (no node is built).
    #[inline]
    pub fn leq(&self, a: Node, b: Node) -> bool {
        unsafe { (self.leq_fn)(self.mgr, a, b) != 0 }
    }

    /// Whether `a ∧ b` implies `c`, without building `a ∧ b` (`Cudd_bddLeqUnless(b, c, ¬a)`:
    /// `b ≤ c ∨ ¬a`; no node is built).
    #[inline]
    pub fn and_leq(&self, a: Node, b: Node, c: Node) -> bool {
        unsafe { (self.leq_unless_fn)(self.mgr, b, c, not(a)) != 0 }
    }

    /// One more reference to `node`.
    #[inline]
    pub fn reference(&self, node: Node) {
        unsafe { (self.ref_fn)(node) }
    }

    /// Drop one reference to `node` (ignores NULL).
    #[inline]
    pub fn release(&self, node: Node) {
        if !node.is_null() {
            unsafe { (self.deref_fn)(self.mgr, node) }
        }
    }

    /// The CUDD variable indices `node` mentions, into `out` (cleared first).
    pub fn support(&self, node: Node, out: &mut Vec<u32>) -> Result<(), Oom> {
        out.clear();
        let mut array: *mut c_int = ptr::null_mut();
        let count = unsafe { (self.support_fn)(self.mgr, node, &mut array) };
        if count < 0 {
            if !array.is_null() {
                unsafe { free(array as *mut c_void) };
            }
            return Err(Oom);
        }
        if count > 0 && !array.is_null() {
            let indices = unsafe { std::slice::from_raw_parts(array, count as usize) };
            out.extend(indices.iter().map(|&i| i as u32));
        }
        if !array.is_null() {
            unsafe { free(array as *mut c_void) };
        }
        Ok(())
    }
}
