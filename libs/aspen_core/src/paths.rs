//! The fused kernel of the path family: `path(x, z, [x, z], c, 1) :- link(x, z, c)` and
//! `path(x, y, [x]+p1, c1+c2, l1+1) :- link(x, z, c1), path(z, y, p1, c2, l1), x ∉ p1`, with
//! aggregate selection (min cost and min hops per (src, dst), every tie kept, decision 6) in
//! front of the fixpoint and absorption provenance over CUDD.
//!
//! A path is an interned cons cell (head node, tail path): a u32, so `[x]+p1` is one lookup
//! and `x ∉ p1` walks at most `hops + 1` cells. A group (src, dst) holds every tuple derived for
//! it (path, cost, hops, formula: AggSel's H and P) and the tuples tied at the best cost and at
//! the best hops. A derivation is stored unless absorbed (`Cudd_bddLeq`-style tests before any
//! node is built); it is forwarded iff its tuple is, or ties, a best of its group (a new
//! derivation of a current best included) — the forwarded derivation (decision 3) then joins
//! with the links into the tuple's source when popped. Links are a map (x, z, cost) → formula
//! (the OR of the instances); a changed link joins its derivation with the current bests of
//! the groups of z. Propagations wait in a heap ordered by (cost, hops), so cheap tuples settle
//! first and fewer dominated ones are derived.
//!
//! A deletion restricts links, tuples and pending derivations (decision 1) through a variable
//! → slots index brought up to date at the end of each run; a group whose best died is
//! rescanned and its newly best tuples are propagated with their whole formula (promotion).
//! There is no lazy mode: the kernel is eager in both of the runtime's modes
//! (docs/decisions/0056-compiled-path-family.md).

use crate::cudd::{Cudd, Node, Oom};
use crate::table::{pair, src_of, FastMap};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::ptr;

/// No tail: the end of a path.
pub const NIL: u32 = u32::MAX;
/// Flags of an exported best tuple.
pub const COST_BEST: u8 = 1;
pub const HOPS_BEST: u8 = 2;

#[derive(Default, Clone, Copy)]
pub struct PathStats {
    pub derivations: i64,
    pub absorbed: i64,
    pub restricted: i64,
    pub links_restricted: i64,
    pub indexed: i64,
    pub promoted: i64,
}

struct Link {
    x: u32,
    z: u32,
    cost: f64,
    node: Node,
    pending: Node,
    dirty: bool,
}

struct Tup {
    pair: u64,
    path: u32,
    cost: f64,
    hops: u32,
    node: Node,
    pending: Node,
    dirty: bool,
}

struct Group {
    slots: Vec<u32>,
    best_cost: f64,
    cost_tied: Vec<u32>,
    best_hops: u32,
    hops_tied: Vec<u32>,
    /// The OR of the tied tuples' formulas (cheapest, fewest hops), referenced; NULL when the
    /// group changed since `minima` last built it.
    cost_or: Node,
    hops_or: Node,
}

impl Group {
    fn bests(&self) -> Vec<(u32, u8)> {
        let mut out: Vec<(u32, u8)> = Vec::with_capacity(self.cost_tied.len() + 1);
        for &s in &self.cost_tied {
            let flags = if self.hops_tied.contains(&s) {
                COST_BEST | HOPS_BEST
            } else {
                COST_BEST
            };
            out.push((s, flags));
        }
        for &s in &self.hops_tied {
            if !self.cost_tied.contains(&s) {
                out.push((s, HOPS_BEST));
            }
        }
        out
    }

    fn is_best(&self, slot: u32) -> bool {
        self.cost_tied.contains(&slot) || self.hops_tied.contains(&slot)
    }
}

/// A best tuple as exported: its group, path, cost, hops, flags and formula (NULL in a
/// journal snapshot).
#[derive(Clone, Copy)]
pub struct Row {
    pub pair: u64,
    pub path: u32,
    pub cost: f64,
    pub hops: u32,
    pub flags: u8,
    pub node: Node,
}

/// A propagation waiting: the tuple in `slot`, ordered by (cost, hops), cheapest first.
struct Task {
    cost: f64,
    hops: u32,
    slot: u32,
}

impl PartialEq for Task {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Task {}
impl PartialOrd for Task {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Task {
    fn cmp(&self, other: &Self) -> Ordering {
        // reversed: BinaryHeap pops the greatest, we want the cheapest
        other
            .cost
            .total_cmp(&self.cost)
            .then(other.hops.cmp(&self.hops))
            .then(other.slot.cmp(&self.slot))
    }
}

/// Variable → slots that may mention it (duplicates allowed, deduplicated as buckets grow).
#[derive(Default)]
struct Index {
    buckets: Vec<Vec<u32>>,
    clean: Vec<usize>,
}

impl Index {
    fn add(&mut self, var: u32, slot: u32) {
        let var = var as usize;
        if var >= self.buckets.len() {
            self.buckets.resize_with(var + 1, Vec::new);
            self.clean.resize(var + 1, 0);
        }
        let bucket = &mut self.buckets[var];
        bucket.push(slot);
        if bucket.len() >= 2 * self.clean[var] + 64 {
            bucket.sort_unstable();
            bucket.dedup();
            self.clean[var] = bucket.len();
        }
    }

    fn take(&mut self, dead: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        for &var in dead {
            let var = var as usize;
            if var < self.buckets.len() {
                self.clean[var] = 0;
                out.extend(std::mem::take(&mut self.buckets[var]));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

pub struct Paths {
    pub cudd: Cudd,
    pub poisoned: bool,
    pub stats: PathStats,
    links: Vec<Link>,
    link_free: Vec<u32>,
    link_map: FastMap<(u64, u64), u32>,
    preds: Vec<Vec<u32>>,
    link_queue: VecDeque<u32>,
    link_dirty: Vec<u32>,
    link_index: Index,
    tuples: Vec<Tup>,
    tup_free: Vec<u32>,
    tup_dirty: Vec<u32>,
    tup_index: Index,
    groups: FastMap<u64, Group>,
    succ_groups: Vec<Vec<u32>>,
    cells: Vec<(u32, u32)>,
    cell_hops: Vec<u32>,
    cell_map: FastMap<u64, u32>,
    heap: BinaryHeap<Task>,
    /// Group → its best tuples when tracking started (first touch), while tracking.
    pub journal: Option<FastMap<u64, Vec<Row>>>,
    support: Vec<u32>,
}

#[inline]
fn cost_bits(cost: f64) -> u64 {
    (cost + 0.0).to_bits() // -0.0 and 0.0 are one cost, as in Python
}

impl Paths {
    pub fn new(cudd: Cudd) -> Self {
        Paths {
            cudd,
            poisoned: false,
            stats: PathStats::default(),
            links: Vec::new(),
            link_free: Vec::new(),
            link_map: FastMap::default(),
            preds: Vec::new(),
            link_queue: VecDeque::new(),
            link_dirty: Vec::new(),
            link_index: Index::default(),
            tuples: Vec::new(),
            tup_free: Vec::new(),
            tup_dirty: Vec::new(),
            tup_index: Index::default(),
            groups: FastMap::default(),
            succ_groups: Vec::new(),
            cells: Vec::new(),
            cell_hops: Vec::new(),
            cell_map: FastMap::default(),
            heap: BinaryHeap::new(),
            journal: None,
            support: Vec::new(),
        }
    }

    // -- paths --------------------------------------------------------------------------------

    fn cell_key(head: u32, tail: u32) -> u64 {
        ((head as u64) << 32) | tail as u64
    }

    fn find_cell(&self, head: u32, tail: u32) -> Option<u32> {
        self.cell_map.get(&Self::cell_key(head, tail)).copied()
    }

    fn cell(&mut self, head: u32, tail: u32) -> u32 {
        let key = Self::cell_key(head, tail);
        if let Some(&id) = self.cell_map.get(&key) {
            return id;
        }
        let id = self.cells.len() as u32;
        let hops = if tail == NIL {
            0
        } else {
            self.cell_hops[tail as usize] + 1
        };
        self.cells.push((head, tail));
        self.cell_hops.push(hops);
        self.cell_map.insert(key, id);
        id
    }

    /// Whether node `x` is on path `p` (walks at most hops + 1 cells).
    fn contains(&self, mut p: u32, x: u32) -> bool {
        while p != NIL {
            let (head, tail) = self.cells[p as usize];
            if head == x {
                return true;
            }
            p = tail;
        }
        false
    }

    pub fn cells(&self) -> &[(u32, u32)] {
        &self.cells
    }

    // -- counts -------------------------------------------------------------------------------

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    pub fn link_count(&self) -> usize {
        self.link_map.len()
    }

    pub fn tuple_count(&self) -> usize {
        self.tuples.len() - self.tup_free.len()
    }

    pub fn waiting(&self) -> usize {
        self.heap.len() + self.link_queue.len()
    }

    // -- links --------------------------------------------------------------------------------

    /// OR `node` into link (x, z, cost); queues its derivation unless absorbed. Returns whether
    /// the link changed.
    pub fn add_link(&mut self, x: u32, z: u32, cost: f64, node: Node) -> Result<bool, Oom> {
        let c = self.cudd;
        if node == c.zero {
            return Ok(false);
        }
        let key = (pair(x, z), cost_bits(cost));
        let slot = match self.link_map.get(&key) {
            Some(&slot) => slot,
            None => {
                c.reference(node);
                let link = Link {
                    x,
                    z,
                    cost: cost + 0.0,
                    node,
                    pending: ptr::null_mut(),
                    dirty: true,
                };
                let slot = match self.link_free.pop() {
                    Some(s) => {
                        self.links[s as usize] = link;
                        s
                    }
                    None => {
                        self.links.push(link);
                        (self.links.len() - 1) as u32
                    }
                };
                self.link_map.insert(key, slot);
                if z as usize >= self.preds.len() {
                    self.preds.resize_with(z as usize + 1, Vec::new);
                }
                self.preds[z as usize].push(slot);
                self.link_dirty.push(slot);
                self.queue_link(slot, node)?;
                return Ok(true);
            }
        };
        let old = self.links[slot as usize].node;
        if c.leq(node, old) {
            return Ok(false);
        }
        let new = c.or(old, node)?;
        c.release(old);
        let link = &mut self.links[slot as usize];
        link.node = new;
        if !link.dirty {
            link.dirty = true;
            self.link_dirty.push(slot);
        }
        self.queue_link(slot, node)?;
        Ok(true)
    }

    fn queue_link(&mut self, slot: u32, d: Node) -> Result<(), Oom> {
        let c = self.cudd;
        let pending = self.links[slot as usize].pending;
        if pending.is_null() {
            c.reference(d);
            self.links[slot as usize].pending = d;
            self.link_queue.push_back(slot);
        } else {
            let new = c.or(pending, d)?;
            c.release(pending);
            self.links[slot as usize].pending = new;
        }
        Ok(())
    }

    fn remove_link(&mut self, slot: u32) {
        let c = self.cudd;
        let link = &mut self.links[slot as usize];
        let (x, z, cost) = (link.x, link.z, link.cost);
        c.release(link.node);
        c.release(link.pending);
        link.node = ptr::null_mut();
        link.pending = ptr::null_mut();
        link.dirty = false;
        self.link_map.remove(&(pair(x, z), cost_bits(cost)));
        let preds = &mut self.preds[z as usize];
        if let Some(pos) = preds.iter().position(|&s| s == slot) {
            preds.swap_remove(pos);
        }
        self.link_free.push(slot);
    }

    /// Every live link: (x, z, cost, formula).
    pub fn link_items(&self) -> impl Iterator<Item = (u32, u32, f64, Node)> + '_ {
        self.links
            .iter()
            .filter(|l| !l.node.is_null())
            .map(|l| (l.x, l.z, l.cost, l.node))
    }

    // -- the journal --------------------------------------------------------------------------

    fn rows_of(&self, pair_key: u64, group: &Group, with_nodes: bool, out: &mut Vec<Row>) {
        for (slot, flags) in group.bests() {
            let t = &self.tuples[slot as usize];
            out.push(Row {
                pair: pair_key,
                path: t.path,
                cost: t.cost,
                hops: t.hops,
                flags,
                node: if with_nodes { t.node } else { ptr::null_mut() },
            });
        }
    }

    /// `pair_key` is about to change: journal its bests, drop its cached minima.
    fn touch(&mut self, pair_key: u64) {
        self.note(pair_key);
        let c = self.cudd;
        if let Some(group) = self.groups.get_mut(&pair_key) {
            c.release(group.cost_or);
            c.release(group.hops_or);
            group.cost_or = ptr::null_mut();
            group.hops_or = ptr::null_mut();
        }
    }

    /// Record the bests of `pair_key` as they are now, if tracking and not recorded yet.
    fn note(&mut self, pair_key: u64) {
        let known = match self.journal.as_ref() {
            None => return,
            Some(journal) => journal.contains_key(&pair_key),
        };
        if known {
            return;
        }
        let mut rows = Vec::new();
        if let Some(group) = self.groups.get(&pair_key) {
            self.rows_of(pair_key, group, false, &mut rows);
        }
        if let Some(journal) = self.journal.as_mut() {
            journal.insert(pair_key, rows);
        }
    }

    /// Call `sink` with each best row (`which`: 0 every group's, 1 the journal's record, 2 the
    /// journal's groups now) until it returns false; nothing is collected (a view of millions
    /// of rows is counted and exported without a copy).
    pub fn each_row(&self, which: i32, mut sink: impl FnMut(Row) -> bool) {
        let mut group_rows = |key: u64, group: &Group| -> bool {
            for (slot, flags) in group.bests() {
                let t = &self.tuples[slot as usize];
                let row = Row {
                    pair: key,
                    path: t.path,
                    cost: t.cost,
                    hops: t.hops,
                    flags,
                    node: t.node,
                };
                if !sink(row) {
                    return false;
                }
            }
            true
        };
        match which {
            0 => {
                for (&key, group) in self.groups.iter() {
                    if !group_rows(key, group) {
                        return;
                    }
                }
            }
            1 => {
                if let Some(journal) = self.journal.as_ref() {
                    for rows in journal.values() {
                        for row in rows {
                            if !sink(*row) {
                                return;
                            }
                        }
                    }
                }
            }
            _ => {
                if let Some(journal) = self.journal.as_ref() {
                    for &key in journal.keys() {
                        if let Some(group) = self.groups.get(&key) {
                            if !group_rows(key, group) {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// How many rows :meth:`each_row` would give for `which`.
    pub fn row_count(&self, which: i32) -> usize {
        let mut count = 0usize;
        self.each_row(which, |_| {
            count += 1;
            true
        });
        count
    }

    // -- derivations --------------------------------------------------------------------------

    /// Derive the tuple (pair, [head]+tail, cost, hops) with `a ∧ b` (`b` NULL: with `a`),
    /// as AggSel then the fixpoint would: stored unless absorbed, forwarded iff best or tied.
    #[allow(clippy::too_many_arguments)] // the tuple's fields, passed apart: hot, no struct
    fn derive(
        &mut self,
        pair_key: u64,
        head: u32,
        tail: u32,
        cost: f64,
        hops: u32,
        a: Node,
        b: Node,
    ) -> Result<(), Oom> {
        let c = self.cudd;
        self.stats.derivations += 1;
        let bits = cost_bits(cost);
        let existing = match (self.find_cell(head, tail), self.groups.get(&pair_key)) {
            (Some(path), Some(group)) => group.slots.iter().copied().find(|&s| {
                let t = &self.tuples[s as usize];
                t.path == path && cost_bits(t.cost) == bits
            }),
            _ => None,
        };
        if let Some(slot) = existing {
            let p = self.tuples[slot as usize].node;
            let absorbed = if b.is_null() {
                c.leq(a, p)
            } else {
                c.and_leq(a, b, p)
            };
            if absorbed {
                self.stats.absorbed += 1;
                return Ok(());
            }
        }
        let d = if b.is_null() {
            c.reference(a);
            a
        } else {
            c.and(a, b)?
        };
        if d == c.zero {
            c.release(d);
            return Ok(());
        }
        self.touch(pair_key);
        let (slot, forward) = match existing {
            Some(slot) => {
                let p = self.tuples[slot as usize].node;
                let new = match c.or(p, d) {
                    Ok(n) => n,
                    Err(e) => {
                        c.release(d);
                        return Err(e);
                    }
                };
                c.release(p);
                let t = &mut self.tuples[slot as usize];
                t.node = new;
                if !t.dirty {
                    t.dirty = true;
                    self.tup_dirty.push(slot);
                }
                // an existing tuple keeps its cost and hops: forwarded iff it is a best
                let forward = self.groups[&pair_key].is_best(slot);
                (slot, forward)
            }
            None => {
                c.reference(d);
                let path = self.cell(head, tail);
                let slot = self.new_tuple(pair_key, path, cost + 0.0, hops, d);
                let forward = self.select(pair_key, slot, cost, hops);
                (slot, forward)
            }
        };
        if forward {
            self.queue_tuple(slot, d)
        } else {
            c.release(d);
            Ok(())
        }
    }

    fn new_tuple(&mut self, pair_key: u64, path: u32, cost: f64, hops: u32, node: Node) -> u32 {
        let t = Tup {
            pair: pair_key,
            path,
            cost,
            hops,
            node,
            pending: ptr::null_mut(),
            dirty: true,
        };
        let slot = match self.tup_free.pop() {
            Some(s) => {
                self.tuples[s as usize] = t;
                s
            }
            None => {
                self.tuples.push(t);
                (self.tuples.len() - 1) as u32
            }
        };
        self.tup_dirty.push(slot);
        slot
    }

    /// AggSel's decision for a new tuple of `pair_key`: join the group, update its bests,
    /// return whether it is (or ties) a best.
    fn select(&mut self, pair_key: u64, slot: u32, cost: f64, hops: u32) -> bool {
        let src = src_of(pair_key);
        let dst = crate::table::dst_of(pair_key);
        if !self.groups.contains_key(&pair_key) {
            if src as usize >= self.succ_groups.len() {
                self.succ_groups.resize_with(src as usize + 1, Vec::new);
            }
            self.succ_groups[src as usize].push(dst);
            self.groups.insert(
                pair_key,
                Group {
                    slots: vec![slot],
                    best_cost: cost,
                    cost_tied: vec![slot],
                    best_hops: hops,
                    hops_tied: vec![slot],
                    cost_or: ptr::null_mut(),
                    hops_or: ptr::null_mut(),
                },
            );
            return true;
        }
        let group = self.groups.get_mut(&pair_key).expect("group");
        group.slots.push(slot);
        let mut forward = false;
        if cost < group.best_cost {
            group.best_cost = cost;
            group.cost_tied.clear();
            group.cost_tied.push(slot);
            forward = true;
        } else if cost == group.best_cost {
            group.cost_tied.push(slot);
            forward = true;
        }
        if hops < group.best_hops {
            group.best_hops = hops;
            group.hops_tied.clear();
            group.hops_tied.push(slot);
            forward = true;
        } else if hops == group.best_hops {
            group.hops_tied.push(slot);
            forward = true;
        }
        forward
    }

    /// Queue the propagation of derivation `d` (referenced: consumed) of the tuple in `slot`.
    fn queue_tuple(&mut self, slot: u32, d: Node) -> Result<(), Oom> {
        let c = self.cudd;
        let t = &mut self.tuples[slot as usize];
        if t.pending.is_null() {
            t.pending = d;
            let task = Task {
                cost: t.cost,
                hops: t.hops,
                slot,
            };
            self.heap.push(task);
            return Ok(());
        }
        let merged = c.or(t.pending, d);
        c.release(d);
        let merged = merged?;
        c.release(t.pending);
        t.pending = merged;
        Ok(())
    }

    /// A changed link (x, z, c) with derivation g: the one-hop path, and [x] + every best
    /// path of the groups (z, y) that does not visit x.
    fn link_step(&mut self, slot: u32) -> Result<(), Oom> {
        let c = self.cudd;
        let (x, z, cost, g) = {
            let l = &mut self.links[slot as usize];
            let g = l.pending;
            l.pending = ptr::null_mut();
            (l.x, l.z, l.cost, g)
        };
        if g.is_null() {
            return Ok(());
        }
        let result = self.link_joins(x, z, cost, g);
        c.release(g);
        result
    }

    fn link_joins(&mut self, x: u32, z: u32, cost: f64, g: Node) -> Result<(), Oom> {
        let single = self.cell(z, NIL);
        self.derive(pair(x, z), x, single, cost, 1, g, ptr::null_mut())?;
        let dsts: Vec<u32> = match self.succ_groups.get(z as usize) {
            Some(list) => list.clone(),
            None => return Ok(()),
        };
        let mut bests: Vec<(u32, f64, u32, Node)> = Vec::new();
        for y in dsts {
            bests.clear();
            if let Some(group) = self.groups.get(&pair(z, y)) {
                for (s, _flags) in group.bests() {
                    let t = &self.tuples[s as usize];
                    bests.push((t.path, t.cost, t.hops, t.node));
                }
            }
            // the target group (x, y) is never (z, y) here: x = z would be on the path
            for &(path, c2, hops, node) in &bests {
                if self.contains(path, x) {
                    continue;
                }
                self.derive(pair(x, y), x, path, cost + c2, hops + 1, g, node)?;
            }
        }
        Ok(())
    }

    /// A forwarded derivation d of path (z, y, p1, c2, l1): joined with every link (x, z, c1),
    /// x ∉ p1.
    fn tuple_step(&mut self, slot: u32) -> Result<(), Oom> {
        let c = self.cudd;
        let (pair_key, path, cost, hops, d) = {
            let t = &mut self.tuples[slot as usize];
            let d = t.pending;
            t.pending = ptr::null_mut();
            (t.pair, t.path, t.cost, t.hops, d)
        };
        if d.is_null() {
            return Ok(());
        }
        let result = self.tuple_joins(pair_key, path, cost, hops, d);
        c.release(d);
        result
    }

    fn tuple_joins(
        &mut self,
        pair_key: u64,
        path: u32,
        cost: f64,
        hops: u32,
        d: Node,
    ) -> Result<(), Oom> {
        let z = src_of(pair_key);
        let y = crate::table::dst_of(pair_key);
        let count = self.preds.get(z as usize).map_or(0, |p| p.len());
        let mut i = 0;
        while i < count {
            let l = self.preds[z as usize][i];
            i += 1;
            let (x, c1, node) = {
                let link = &self.links[l as usize];
                (link.x, link.cost, link.node)
            };
            if self.contains(path, x) {
                continue;
            }
            self.derive(pair(x, y), x, path, c1 + cost, hops + 1, node, d)?;
        }
        Ok(())
    }

    /// Run to quiescence, then index what changed; returns the derivations processed.
    pub fn run(&mut self) -> Result<i64, Oom> {
        let before = self.stats.derivations;
        loop {
            if let Some(slot) = self.link_queue.pop_front() {
                self.link_step(slot)?;
                continue;
            }
            match self.heap.pop() {
                Some(task) => self.tuple_step(task.slot)?,
                None => break,
            }
        }
        self.index()?;
        Ok(self.stats.derivations - before)
    }

    // -- the deletion index -------------------------------------------------------------------

    /// Bring the deletion index up to date; returns the entries indexed.
    pub fn index(&mut self) -> Result<i64, Oom> {
        let c = self.cudd;
        let mut n = 0;
        let dirty = std::mem::take(&mut self.link_dirty);
        for (i, &slot) in dirty.iter().enumerate() {
            let node = self.links[slot as usize].node;
            self.links[slot as usize].dirty = false;
            if node.is_null() {
                continue;
            }
            if let Err(e) = c.support(node, &mut self.support) {
                self.link_dirty.extend_from_slice(&dirty[i..]);
                return Err(e);
            }
            for &var in self.support.iter() {
                self.link_index.add(var, slot);
            }
            n += 1;
        }
        let dirty = std::mem::take(&mut self.tup_dirty);
        for (i, &slot) in dirty.iter().enumerate() {
            let node = self.tuples[slot as usize].node;
            self.tuples[slot as usize].dirty = false;
            if node.is_null() {
                continue;
            }
            if let Err(e) = c.support(node, &mut self.support) {
                self.tup_dirty.extend_from_slice(&dirty[i..]);
                return Err(e);
            }
            for &var in self.support.iter() {
                self.tup_index.add(var, slot);
            }
            n += 1;
        }
        self.stats.indexed += n;
        Ok(n)
    }

    // -- deletion -----------------------------------------------------------------------------

    fn restrict(c: &Cudd, slot_node: &mut Node, cube: Node) -> Result<bool, Oom> {
        let old = *slot_node;
        if old.is_null() {
            return Ok(false);
        }
        let new = c.cofactor(old, cube)?;
        if new == old {
            c.release(new);
            return Ok(false);
        }
        c.release(old);
        if new == c.zero {
            c.release(new);
            *slot_node = ptr::null_mut();
        } else {
            *slot_node = new;
        }
        Ok(true)
    }

    /// Set the dead variables (CUDD indices; `cube` the conjunction of their negations) to
    /// false in every link, tuple and pending derivation; promote the next bests of groups
    /// whose best died. Returns the tuples changed.
    pub fn delete(&mut self, dead: &[u32], cube: Node) -> Result<i64, Oom> {
        let c = self.cudd;
        self.index()?;
        // pending derivations (a pending one may mention a variable its entry does not)
        let queued: Vec<u32> = self.link_queue.iter().copied().collect();
        for slot in queued {
            Self::restrict(&c, &mut self.links[slot as usize].pending, cube)?;
        }
        let waiting: Vec<u32> = self.heap.iter().map(|t| t.slot).collect();
        for slot in waiting {
            Self::restrict(&c, &mut self.tuples[slot as usize].pending, cube)?;
        }
        // links
        for slot in self.link_index.take(dead) {
            let link = &mut self.links[slot as usize];
            if link.node.is_null() {
                continue;
            }
            if Self::restrict(&c, &mut link.node, cube)? {
                self.stats.links_restricted += 1;
                if self.links[slot as usize].node.is_null() {
                    // remove_link releases nothing twice: node is NULL already
                    self.remove_link(slot);
                }
            }
        }
        // tuples
        let mut changed = 0;
        let mut affected: Vec<u64> = Vec::new();
        let mut graveyard: Vec<u32> = Vec::new();
        for slot in self.tup_index.take(dead) {
            let (pair_key, old) = {
                let t = &self.tuples[slot as usize];
                (t.pair, t.node)
            };
            if old.is_null() {
                continue;
            }
            let new = c.cofactor(old, cube)?;
            if new == old {
                c.release(new);
                continue;
            }
            self.touch(pair_key);
            changed += 1;
            c.release(old);
            if new != c.zero {
                self.tuples[slot as usize].node = new;
                continue;
            }
            c.release(new);
            let t = &mut self.tuples[slot as usize];
            t.node = ptr::null_mut();
            c.release(t.pending);
            t.pending = ptr::null_mut();
            graveyard.push(slot);
            let group = self.groups.get_mut(&pair_key).expect("group of a tuple");
            if let Some(pos) = group.slots.iter().position(|&s| s == slot) {
                group.slots.swap_remove(pos);
            }
            if group.is_best(slot) || group.slots.is_empty() {
                affected.push(pair_key);
            }
        }
        affected.sort_unstable();
        affected.dedup();
        for pair_key in affected {
            self.rescan(pair_key)?;
        }
        for slot in graveyard {
            self.tup_free.push(slot);
        }
        self.stats.restricted += changed;
        Ok(changed)
    }

    /// Recompute the bests of `pair_key` from its tuples; the newly best ones are propagated
    /// with their whole formula (promotion); an empty group leaves.
    fn rescan(&mut self, pair_key: u64) -> Result<(), Oom> {
        let c = self.cudd;
        let promoted: Vec<u32> = {
            let group = match self.groups.get_mut(&pair_key) {
                Some(g) => g,
                None => return Ok(()),
            };
            if group.slots.is_empty() {
                c.release(group.cost_or);
                c.release(group.hops_or);
                self.groups.remove(&pair_key);
                let src = src_of(pair_key) as usize;
                let dst = crate::table::dst_of(pair_key);
                let list = &mut self.succ_groups[src];
                if let Some(pos) = list.iter().position(|&d| d == dst) {
                    list.swap_remove(pos);
                }
                return Ok(());
            }
            let tuples = &self.tuples;
            let mut best_cost = f64::INFINITY;
            let mut cost_tied: Vec<u32> = Vec::new();
            let mut best_hops = u32::MAX;
            let mut hops_tied: Vec<u32> = Vec::new();
            for &s in &group.slots {
                let t = &tuples[s as usize];
                if cost_tied.is_empty() || t.cost < best_cost {
                    best_cost = t.cost;
                    cost_tied.clear();
                    cost_tied.push(s);
                } else if t.cost == best_cost {
                    cost_tied.push(s);
                }
                if hops_tied.is_empty() || t.hops < best_hops {
                    best_hops = t.hops;
                    hops_tied.clear();
                    hops_tied.push(s);
                } else if t.hops == best_hops {
                    hops_tied.push(s);
                }
            }
            let mut promoted: Vec<u32> = Vec::new();
            for &s in cost_tied.iter().chain(hops_tied.iter()) {
                if !group.is_best(s) && !promoted.contains(&s) {
                    promoted.push(s);
                }
            }
            group.best_cost = best_cost;
            group.cost_tied = cost_tied;
            group.best_hops = best_hops;
            group.hops_tied = hops_tied;
            promoted
        };
        for slot in promoted {
            self.stats.promoted += 1;
            let node = self.tuples[slot as usize].node;
            c.reference(node);
            self.queue_tuple(slot, node)?;
        }
        Ok(())
    }

    /// Per group: (pair, best cost or, with `hops`, best hops, the OR of the tied tuples'
    /// formulas), written into `out`. The ORs are kept per group (referenced) until the group
    /// changes, so a read after a batch builds only those of the groups it touched.
    pub fn minima(&mut self, hops: bool, out: &mut Vec<(u64, f64, Node)>) -> Result<(), Oom> {
        let c = self.cudd;
        out.clear();
        out.reserve(self.groups.len());
        let tuples = &self.tuples;
        for (&key, group) in self.groups.iter_mut() {
            let (value, cached) = if hops {
                (group.best_hops as f64, group.hops_or)
            } else {
                (group.best_cost, group.cost_or)
            };
            if !cached.is_null() {
                out.push((key, value, cached));
                continue;
            }
            let tied = if hops {
                &group.hops_tied
            } else {
                &group.cost_tied
            };
            let mut node: Node = ptr::null_mut();
            for &s in tied {
                let f = tuples[s as usize].node;
                if node.is_null() {
                    c.reference(f);
                    node = f;
                } else {
                    let merged = c.or(node, f);
                    c.release(node);
                    node = merged?;
                }
            }
            if node.is_null() {
                continue;
            }
            if hops {
                group.hops_or = node;
            } else {
                group.cost_or = node;
            }
            out.push((key, value, node));
        }
        Ok(())
    }

    /// Release every reference and empty the kernel.
    pub fn release_all(&mut self) {
        let c = self.cudd;
        for group in self.groups.values_mut() {
            c.release(group.cost_or);
            c.release(group.hops_or);
            group.cost_or = ptr::null_mut();
            group.hops_or = ptr::null_mut();
        }
        for l in self.links.iter_mut() {
            c.release(l.node);
            c.release(l.pending);
            l.node = ptr::null_mut();
            l.pending = ptr::null_mut();
        }
        for t in self.tuples.iter_mut() {
            c.release(t.node);
            c.release(t.pending);
            t.node = ptr::null_mut();
            t.pending = ptr::null_mut();
        }
        self.links.clear();
        self.link_free.clear();
        self.link_map.clear();
        self.preds.clear();
        self.link_queue.clear();
        self.link_dirty.clear();
        self.link_index = Index::default();
        self.tuples.clear();
        self.tup_free.clear();
        self.tup_dirty.clear();
        self.tup_index = Index::default();
        self.groups.clear();
        self.succ_groups.clear();
        self.heap.clear();
    }
}

impl Drop for Paths {
    fn drop(&mut self) {
        self.release_all();
    }
}
