//! A map pair key → formula kept in a slab, with an adjacency list per group node and a
//! deletion index variable → slots.
//!
//! A key is `(src << 32) | dst`. The group of an entry is its `src` (the closure: successors
//! per source) or its `dst` (the links: predecessors per destination); each entry knows its
//! position in its group's list, so removal is O(1). The deletion index lists, per CUDD
//! variable index, a superset of the slots whose formula mentions the variable: a slot freed
//! and reused, or a formula restricted since, is only a spurious candidate.

use crate::cudd::Node;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ptr;

/// A fast hasher for `u64` keys (multiplicative mixing; keys are not adversarial: they are
/// interned ids).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u64(&mut self, value: u64) {
        let x = (self.0 ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

#[inline]
pub fn src_of(key: u64) -> u32 {
    (key >> 32) as u32
}

#[inline]
pub fn dst_of(key: u64) -> u32 {
    key as u32
}

#[inline]
pub fn pair(src: u32, dst: u32) -> u64 {
    ((src as u64) << 32) | dst as u64
}

/// One slot: a live entry when `node` is not NULL.
pub struct Entry {
    pub key: u64,
    /// The stored formula (one CUDD reference), NULL when the slot is free.
    pub node: Node,
    /// The derivation waiting in the worklist (one reference), NULL when none.
    pub pending: Node,
    /// Lazy mode: the alternatives received but not propagated (one reference), NULL when
    /// none (always NULL for links and in eager mode).
    pub buffer: Node,
    /// Position in the group's list.
    pub pos: u32,
    /// Changed since the deletion index was last brought up to date.
    pub dirty: bool,
}

pub struct Table {
    pub slots: Vec<Entry>,
    free: Vec<u32>,
    map: FastMap<u64, u32>,
    groups: Vec<Vec<u32>>,
    by_src: bool,
    index: Vec<Vec<u32>>,
    /// Bucket length after its last deduplication.
    clean: Vec<usize>,
    dirty: Vec<u32>,
}

impl Table {
    pub fn new(by_src: bool) -> Self {
        Table {
            slots: Vec::new(),
            free: Vec::new(),
            map: FastMap::default(),
            groups: Vec::new(),
            by_src,
            index: Vec::new(),
            clean: Vec::new(),
            dirty: Vec::new(),
        }
    }

    #[inline]
    fn group_of(&self, key: u64) -> usize {
        (if self.by_src {
            src_of(key)
        } else {
            dst_of(key)
        }) as usize
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    #[inline]
    pub fn find(&self, key: u64) -> Option<u32> {
        self.map.get(&key).copied()
    }

    /// The slots of the entries in group `node` (successors or predecessors).
    #[inline]
    pub fn group(&self, node: u32) -> &[u32] {
        match self.groups.get(node as usize) {
            Some(list) => list,
            None => &[],
        }
    }

    /// Store a new entry (`node` already referenced for it); marks it dirty.
    pub fn insert(&mut self, key: u64, node: Node) -> u32 {
        let group = self.group_of(key);
        if group >= self.groups.len() {
            self.groups.resize_with(group + 1, Vec::new);
        }
        let pos = self.groups[group].len() as u32;
        let entry = Entry {
            key,
            node,
            pending: ptr::null_mut(),
            buffer: ptr::null_mut(),
            pos,
            dirty: true,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.groups[group].push(slot);
        self.map.insert(key, slot);
        self.dirty.push(slot);
        slot
    }

    /// Free a live slot; returns its (node, pending, buffer) for the caller to release.
    pub fn remove(&mut self, slot: u32) -> (Node, Node, Node) {
        let (key, pos) = {
            let e = &self.slots[slot as usize];
            (e.key, e.pos as usize)
        };
        let group = self.group_of(key);
        let list = &mut self.groups[group];
        list.swap_remove(pos);
        if pos < list.len() {
            let moved = list[pos];
            self.slots[moved as usize].pos = pos as u32;
        }
        self.map.remove(&key);
        let e = &mut self.slots[slot as usize];
        let out = (e.node, e.pending, e.buffer);
        e.node = ptr::null_mut();
        e.pending = ptr::null_mut();
        e.buffer = ptr::null_mut();
        e.dirty = false;
        self.free.push(slot);
        out
    }

    /// Note that the formula (or buffer) of `slot` grew: its support goes into the index at
    /// the next `take_dirty`.
    #[inline]
    pub fn mark(&mut self, slot: u32) {
        let e = &mut self.slots[slot as usize];
        if !e.dirty {
            e.dirty = true;
            self.dirty.push(slot);
        }
    }

    /// The live slots changed since the last call (their dirty flags cleared).
    pub fn take_dirty(&mut self) -> Vec<u32> {
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.retain(|&slot| {
            let e = &mut self.slots[slot as usize];
            let keep = e.dirty && !e.node.is_null();
            e.dirty = false;
            keep
        });
        dirty
    }

    /// Put back slots whose indexing failed (they stay dirty).
    pub fn restore_dirty(&mut self, slots: &[u32]) {
        for &slot in slots {
            self.mark(slot);
        }
    }

    /// Record that `slot` may mention variable `var`.
    #[inline]
    pub fn index_add(&mut self, var: u32, slot: u32) {
        let var = var as usize;
        if var >= self.index.len() {
            self.index.resize_with(var + 1, Vec::new);
            self.clean.resize(var + 1, 0);
        }
        let bucket = &mut self.index[var];
        bucket.push(slot);
        if bucket.len() >= 2 * self.clean[var] + 64 {
            // the same entry is indexed again each run it grows: keep buckets near their size
            bucket.sort_unstable();
            bucket.dedup();
            self.clean[var] = bucket.len();
        }
    }

    /// Remove and return the bucket of `var` (the slots that may mention it).
    pub fn index_take(&mut self, var: u32) -> Vec<u32> {
        let var = var as usize;
        if var >= self.index.len() {
            return Vec::new();
        }
        self.clean[var] = 0;
        std::mem::take(&mut self.index[var])
    }

    /// Every live slot, in slab order.
    pub fn live(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().filter(|e| !e.node.is_null())
    }
}
