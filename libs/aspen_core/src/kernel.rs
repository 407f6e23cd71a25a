//! The fused kernel of `reachable(x, y) :- link(x, y, _)` and
//! `reachable(x, y) :- link(x, z, _) ∧ reachable(z, y)` with absorption provenance.
//!
//! Semi-naive to quiescence. Each entry holds its formula and, while it waits in the
//! worklist, its pending derivation (later derivations OR into it: coalescing). A changed link
//! (x, z) with derivation g derives reachable(x, z) with g and reachable(x, y) with
//! g ∧ R[z, y] for every stored R[z, y]; a changed closure entry (z, y) with derivation d
//! derives reachable(x, y) with L[x, z] ∧ d for every link (x, z). Both are stored when
//! derived and joined with the other side's current formulas when popped, so every pair of
//! derivations meets once at least. A derivation implied by the stored formula is absorbed
//! (this ends cycles); the test runs before the conjunction is built (`and_leq`), so an
//! absorbed derivation creates no node.
//!
//! The worklist holds the changed links first (FIFO), then one stack per destination column y:
//! a closure change (z, y) derives only entries of column y, so columns are drained one at a
//! time. Within a column the last entry changed goes first (depth-first; an entry derived
//! again while it waits moves to the top): at 300 nodes this takes 30 % of a FIFO's CPU time,
//! as each entry propagates a small fresh derivation rather than one that coalesced many
//! (docs/decisions/0053-compiled-core.md).
//!
//! Deletion restricts every formula that may mention a dead variable (decision 1):
//! restriction of the full provenance is exact, nothing is re-derived.
//!
//! Lazy mode is the analogue of a lazy MinShip in front of each entry (decision 5): a
//! derivation that is not absorbed by an entry that is neither new nor waiting is OR-ed into
//! the entry's buffer and not propagated. A deletion that changes an entry's formula ships its
//! (restricted) buffer: OR-ed into the formula and waiting, so the next run propagates it; an
//! entry leaves only when both are false. `flush` ships every buffer and runs eagerly to
//! quiescence: the formulas are then the full provenance, as in eager mode.
//!
//! Targets mode (`add_targets`, off until a target is named) keeps only the entries whose
//! destination is a target: a link derives its base case only when its destination is one,
//! and every step keeps its destination, so nothing else is ever derived; its columns are
//! then queues (breadth-first: short walks settle first and absorb the long ones). A region
//! view runs on it with its edges reversed (docs/decisions/0057-compiled-regions.md): the
//! closure from every node to a few region nodes costs what the region rows cost, not all
//! pairs.

use crate::cudd::{Cudd, Node, Oom};
use crate::table::{dst_of, pair, src_of, FastMap, Table};
use std::collections::VecDeque;
use std::ptr;

#[derive(Default, Clone, Copy)]
pub struct Stats {
    pub derivations: i64,
    pub absorbed: i64,
    pub restricted: i64,
    pub links_restricted: i64,
    pub indexed: i64,
    /// Lazy mode: derivations OR-ed into a buffer instead of propagated.
    pub buffered: i64,
    /// Buffers moved into their formula and propagated (by a deletion or a flush).
    pub shipped: i64,
}

/// The closure entries waiting, one stack per destination column, and the columns that have
/// some (each listed once). A slot may be in its stack more than once: it is processed at its
/// topmost place, the others pop with nothing pending. `fifo` makes each column a queue
/// (breadth-first; a waiting entry keeps its place): targets mode uses it.
#[derive(Default)]
pub struct Columns {
    queues: Vec<VecDeque<u32>>,
    active: VecDeque<u32>,
    listed: Vec<bool>,
    /// Items in the stacks (stale ones included).
    pub waiting: usize,
    pub fifo: bool,
}

impl Columns {
    fn push(&mut self, column: u32, slot: u32) {
        let y = column as usize;
        if y >= self.queues.len() {
            self.queues.resize_with(y + 1, VecDeque::new);
            self.listed.resize(y + 1, false);
        }
        self.queues[y].push_back(slot);
        self.waiting += 1;
        if !self.listed[y] {
            self.listed[y] = true;
            self.active.push_back(column);
        }
    }

    /// The next waiting slot: the current column's last until the column is empty.
    fn pop(&mut self) -> Option<u32> {
        while let Some(&column) = self.active.front() {
            let queue = &mut self.queues[column as usize];
            let next = if self.fifo {
                queue.pop_front()
            } else {
                queue.pop_back()
            };
            if let Some(slot) = next {
                self.waiting -= 1;
                return Some(slot);
            }
            self.active.pop_front();
            self.listed[column as usize] = false;
        }
        None
    }

    /// Every waiting slot (a slot may be listed twice; stale ones have no pending).
    fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.active
            .iter()
            .flat_map(move |&c| self.queues[c as usize].iter().copied())
    }

    fn clear(&mut self) {
        for &column in &self.active {
            self.queues[column as usize].clear();
            self.listed[column as usize] = false;
        }
        self.active.clear();
        self.waiting = 0;
    }
}

/// What a derivation touches: the closure, its worklist, the membership journal, counters.
pub struct State {
    pub closure: Table,
    pub columns: Columns,
    pub journal: Option<FastMap<u64, bool>>,
    pub stats: Stats,
    /// Buffer alternatives rather than propagate them (lazy mode; off during a flush).
    pub lazy: bool,
    /// Closure entries with a buffer.
    pub alternatives: usize,
}

impl State {
    /// Derive reachable `key` with `a ∧ b` (both borrowed): absorbed when implied by the
    /// stored formula, else OR-ed into it and into its pending derivation.
    fn derive_and(&mut self, c: &Cudd, key: u64, a: Node, b: Node) -> Result<(), Oom> {
        self.stats.derivations += 1;
        match self.closure.find(key) {
            Some(slot) => {
                let e = &self.closure.slots[slot as usize];
                let (old, waiting, buffer) = (e.node, !e.pending.is_null(), e.buffer);
                if c.and_leq(a, b, old)
                    || (self.lazy && !waiting && !buffer.is_null() && c.and_leq(a, b, buffer))
                {
                    self.stats.absorbed += 1;
                    return Ok(());
                }
                let d = c.and(a, b)?;
                if self.lazy && !waiting {
                    return self.buffer(c, slot, d);
                }
                self.grow(c, slot, old, d)
            }
            None => {
                let d = c.and(a, b)?;
                self.create(c, key, d);
                Ok(())
            }
        }
    }

    /// Derive reachable `key` with `d` (borrowed).
    fn derive(&mut self, c: &Cudd, key: u64, d: Node) -> Result<(), Oom> {
        self.stats.derivations += 1;
        match self.closure.find(key) {
            Some(slot) => {
                let e = &self.closure.slots[slot as usize];
                let (old, waiting, buffer) = (e.node, !e.pending.is_null(), e.buffer);
                if c.leq(d, old) || (self.lazy && !waiting && !buffer.is_null() && c.leq(d, buffer))
                {
                    self.stats.absorbed += 1;
                    return Ok(());
                }
                c.reference(d);
                if self.lazy && !waiting {
                    return self.buffer(c, slot, d);
                }
                self.grow(c, slot, old, d)
            }
            None => {
                c.reference(d);
                self.create(c, key, d);
                Ok(())
            }
        }
    }

    /// A new entry with derivation `d` (owned: one reference).
    fn create(&mut self, c: &Cudd, key: u64, d: Node) {
        if d == c.zero {
            c.release(d);
            return;
        }
        c.reference(d); // one reference for the entry, one for the pending derivation
        let slot = self.closure.insert(key, d);
        self.closure.slots[slot as usize].pending = d;
        self.columns.push(dst_of(key), slot);
        if let Some(journal) = &mut self.journal {
            journal.entry(key).or_insert(false);
        }
    }

    /// Lazy mode: OR derivation `d` (owned, not implied by the entry) into the buffer of
    /// `slot`, an entry that is not waiting; nothing is propagated.
    fn buffer(&mut self, c: &Cudd, slot: u32, d: Node) -> Result<(), Oom> {
        self.stats.buffered += 1;
        let old = self.closure.slots[slot as usize].buffer;
        if old.is_null() {
            self.closure.slots[slot as usize].buffer = d;
            self.alternatives += 1;
        } else {
            let merged = c.or(old, d);
            c.release(d);
            let merged = merged?;
            c.release(old);
            self.closure.slots[slot as usize].buffer = merged;
        }
        self.closure.mark(slot); // the buffer's support goes into the deletion index too
        Ok(())
    }

    /// Ship the buffer of `slot` (not NULL): OR it into the formula and the pending
    /// derivation, and queue the entry. The support of F ∨ B is already indexed.
    fn ship(&mut self, c: &Cudd, slot: u32) -> Result<(), Oom> {
        let e = &self.closure.slots[slot as usize];
        let (old, b, pending, key) = (e.node, e.buffer, e.pending, e.key);
        let new = c.or(old, b)?;
        let merged = if pending.is_null() {
            c.reference(b);
            b
        } else {
            match c.or(pending, b) {
                Ok(merged) => merged,
                Err(e) => {
                    c.release(new);
                    return Err(e);
                }
            }
        };
        c.release(old);
        c.release(pending);
        c.release(b);
        let e = &mut self.closure.slots[slot as usize];
        e.node = new;
        e.pending = merged;
        e.buffer = ptr::null_mut();
        self.alternatives -= 1;
        self.stats.shipped += 1;
        self.columns.push(dst_of(key), slot);
        Ok(())
    }

    /// OR derivation `d` (owned, not implied by `old`) into entry `slot` and its pending one.
    fn grow(&mut self, c: &Cudd, slot: u32, old: Node, d: Node) -> Result<(), Oom> {
        let new = match c.or(old, d) {
            Ok(new) => new,
            Err(e) => {
                c.release(d);
                return Err(e);
            }
        };
        c.release(old);
        let entry = &mut self.closure.slots[slot as usize];
        entry.node = new;
        let pending = entry.pending;
        let key = entry.key;
        self.closure.mark(slot);
        if pending.is_null() {
            self.closure.slots[slot as usize].pending = d;
            self.columns.push(dst_of(key), slot);
        } else {
            let merged = c.or(pending, d);
            c.release(d);
            let merged = merged?;
            c.release(pending);
            self.closure.slots[slot as usize].pending = merged;
            if !self.columns.fifo {
                // to the top of its column: its older place pops with nothing pending
                self.columns.push(dst_of(key), slot);
            }
        }
        Ok(())
    }
}

pub struct Core {
    pub cudd: Cudd,
    pub links: Table,
    /// The changed links waiting (processed before any column).
    pub link_queue: VecDeque<u32>,
    pub state: State,
    /// A CUDD call failed mid-way: the closure may be incomplete; only reads and destroy work.
    pub poisoned: bool,
    /// Targets mode: which node ids are targets (None: every node is, the plain closure).
    targets: Option<Vec<bool>>,
    scratch: Vec<u32>,
    support: Vec<u32>,
}

impl Core {
    pub fn new(cudd: Cudd) -> Self {
        Core {
            cudd,
            links: Table::new(false),
            link_queue: VecDeque::new(),
            state: State {
                closure: Table::new(true),
                columns: Columns::default(),
                journal: None,
                stats: Stats::default(),
                lazy: false,
                alternatives: 0,
            },
            poisoned: false,
            targets: None,
            scratch: Vec::new(),
            support: Vec::new(),
        }
    }

    /// Mark node ids as targets (targets mode from now on: only entries (x, t) with t a
    /// target are derived). Call before the links into them are added.
    pub fn add_targets(&mut self, ids: &[u32]) {
        // breadth-first: from a few targets, depth-first walks derive long chains that the
        // short ones absorb later (a region flush at 1,000 sensors: 1.1 M derivations, 5 k
        // breadth-first)
        self.state.columns.fifo = true;
        let targets = self.targets.get_or_insert_with(Vec::new);
        for &id in ids {
            let i = id as usize;
            if i >= targets.len() {
                targets.resize(i + 1, false);
            }
            targets[i] = true;
        }
    }

    fn is_target(&self, node: u32) -> bool {
        match &self.targets {
            None => true,
            Some(targets) => targets.get(node as usize).copied().unwrap_or(false),
        }
    }

    /// Derivations waiting in the worklist (links and closure entries).
    pub fn waiting(&self) -> usize {
        self.link_queue.len() + self.state.columns.waiting
    }

    /// OR `g` (borrowed) into link `key`; queue its derivations unless absorbed. Returns
    /// whether the link changed.
    pub fn add_link(&mut self, key: u64, g: Node) -> Result<bool, Oom> {
        let c = self.cudd;
        if g.is_null() || g == c.zero {
            return Ok(false);
        }
        match self.links.find(key) {
            Some(slot) => {
                let old = self.links.slots[slot as usize].node;
                if c.leq(g, old) {
                    return Ok(false);
                }
                let new = c.or(old, g)?;
                c.release(old);
                self.links.slots[slot as usize].node = new;
                self.links.mark(slot);
                let pending = self.links.slots[slot as usize].pending;
                if pending.is_null() {
                    c.reference(g);
                    self.links.slots[slot as usize].pending = g;
                    self.link_queue.push_back(slot);
                } else {
                    let merged = c.or(pending, g)?;
                    c.release(pending);
                    self.links.slots[slot as usize].pending = merged;
                }
            }
            None => {
                c.reference(g);
                c.reference(g);
                let slot = self.links.insert(key, g);
                self.links.slots[slot as usize].pending = g;
                self.link_queue.push_back(slot);
            }
        }
        Ok(true)
    }

    /// Replace the entry `key` of the closure (`links`: of the links) by `f` (borrowed, not
    /// false), without deriving anything: a state restore.
    pub fn set(&mut self, links: bool, key: u64, f: Node) {
        let c = self.cudd;
        c.reference(f);
        let table = if links {
            &mut self.links
        } else {
            &mut self.state.closure
        };
        match table.find(key) {
            Some(slot) => {
                let old = table.slots[slot as usize].node;
                let buffer = table.slots[slot as usize].buffer;
                table.slots[slot as usize].node = f;
                table.mark(slot);
                c.release(old);
                if !buffer.is_null() {
                    // a restored formula replaces the entry's alternatives too
                    table.slots[slot as usize].buffer = ptr::null_mut();
                    c.release(buffer);
                    self.state.alternatives -= 1;
                }
            }
            None => {
                table.insert(key, f);
                if !links {
                    if let Some(journal) = &mut self.state.journal {
                        journal.entry(key).or_insert(false);
                    }
                }
            }
        }
    }

    /// A changed link (x, z) with derivation `g`: reachable(x, z) with g (in targets mode only
    /// when z is a target), and (x, y) with g ∧ R[z, y] for every stored R[z, y].
    fn link_step(&mut self, slot: u32) -> Result<(), Oom> {
        let c = self.cudd;
        let entry = &mut self.links.slots[slot as usize];
        let g = entry.pending;
        if g.is_null() {
            return Ok(()); // stale: restricted away, or the slot was reused
        }
        entry.pending = ptr::null_mut();
        let key = entry.key;
        let (x, z) = (src_of(key), dst_of(key));
        let base = self.is_target(z);
        let mut targets = std::mem::take(&mut self.scratch);
        targets.clear();
        targets.extend_from_slice(self.state.closure.group(z));
        let state = &mut self.state;
        let result = (|| {
            if base {
                state.derive(&c, key, g)?;
            }
            for &t in &targets {
                // read now: with a self-loop (x = z) an earlier target may have changed it
                let (r, y) = {
                    let e = &state.closure.slots[t as usize];
                    (e.node, dst_of(e.key))
                };
                state.derive_and(&c, pair(x, y), g, r)?;
            }
            Ok(())
        })();
        self.scratch = targets;
        c.release(g);
        result
    }

    /// A changed closure entry (z, y) with derivation `d`: reachable(x, y) with L[x, z] ∧ d
    /// for every link (x, z).
    fn closure_step(&mut self, slot: u32) -> Result<(), Oom> {
        let c = self.cudd;
        let entry = &mut self.state.closure.slots[slot as usize];
        let d = entry.pending;
        if d.is_null() {
            return Ok(());
        }
        entry.pending = ptr::null_mut();
        let key = entry.key;
        let (z, y) = (src_of(key), dst_of(key));
        let links = &self.links;
        let state = &mut self.state;
        let result = (|| {
            for &l in links.group(z) {
                let e = &links.slots[l as usize];
                state.derive_and(&c, pair(src_of(e.key), y), e.node, d)?;
            }
            Ok(())
        })();
        c.release(d);
        result
    }

    /// Ship every buffer and run eagerly to quiescence (nothing is buffered meanwhile): the
    /// formulas are then the full provenance. Returns the derivations processed.
    pub fn flush(&mut self) -> Result<i64, Oom> {
        let c = self.cudd;
        for slot in 0..self.state.closure.slots.len() {
            let e = &self.state.closure.slots[slot];
            if !e.node.is_null() && !e.buffer.is_null() {
                self.state.ship(&c, slot as u32)?;
            }
        }
        let lazy = self.state.lazy;
        self.state.lazy = false;
        let result = self.run();
        self.state.lazy = lazy;
        result
    }

    /// Run to quiescence, then index the entries changed; returns derivations processed.
    pub fn run(&mut self) -> Result<i64, Oom> {
        let before = self.state.stats.derivations;
        while let Some(slot) = self.link_queue.pop_front() {
            self.link_step(slot)?;
        }
        while let Some(slot) = self.state.columns.pop() {
            self.closure_step(slot)?;
        }
        self.index()?;
        Ok(self.state.stats.derivations - before)
    }

    fn index_table(c: &Cudd, table: &mut Table, support: &mut Vec<u32>) -> Result<i64, Oom> {
        let dirty = table.take_dirty();
        for (i, &slot) in dirty.iter().enumerate() {
            let e = &table.slots[slot as usize];
            for node in [e.node, e.buffer] {
                if node.is_null() {
                    continue;
                }
                if let Err(e) = c.support(node, support) {
                    table.restore_dirty(&dirty[i..]);
                    return Err(e);
                }
                for &var in support.iter() {
                    table.index_add(var, slot);
                }
            }
        }
        Ok(dirty.len() as i64)
    }

    /// Bring the deletion index up to date; returns the entries indexed.
    pub fn index(&mut self) -> Result<i64, Oom> {
        let c = self.cudd;
        let n = Self::index_table(&c, &mut self.links, &mut self.support)?
            + Self::index_table(&c, &mut self.state.closure, &mut self.support)?;
        self.state.stats.indexed += n;
        Ok(n)
    }

    /// Restrict the candidate slots of `table` by `cube`, formulas and buffers; removes the
    /// entries whose formula and buffer become false. Returns how many formulas changed; the
    /// slots whose formula changed while a buffer remains go into `ships`.
    fn restrict_table(
        c: &Cudd,
        table: &mut Table,
        dead: &[u32],
        cube: Node,
        mut journal: Option<&mut FastMap<u64, bool>>,
        alternatives: &mut usize,
        ships: &mut Vec<u32>,
    ) -> Result<i64, Oom> {
        let mut candidates: Vec<u32> = Vec::new();
        for &var in dead {
            candidates.extend(table.index_take(var));
        }
        candidates.sort_unstable();
        candidates.dedup();
        let mut changed = 0;
        for (i, &slot) in candidates.iter().enumerate() {
            let (old, old_buffer) = {
                let e = &table.slots[slot as usize];
                (e.node, e.buffer)
            };
            if old.is_null() {
                continue;
            }
            let restricted = c.cofactor(old, cube).and_then(|new| {
                if old_buffer.is_null() {
                    return Ok((new, ptr::null_mut()));
                }
                match c.cofactor(old_buffer, cube) {
                    Ok(buffer) => Ok((new, buffer)),
                    Err(e) => {
                        c.release(new);
                        Err(e)
                    }
                }
            });
            let (new, buffer) = match restricted {
                Ok(pair) => pair,
                Err(e) => {
                    // not yet restricted: back into the buckets they came from
                    for &rest in &candidates[i..] {
                        for &var in dead {
                            table.index_add(var, rest);
                        }
                    }
                    return Err(e);
                }
            };
            let mut buffer_left = !old_buffer.is_null();
            if !old_buffer.is_null() {
                c.release(old_buffer);
                if buffer == c.zero {
                    c.release(buffer);
                    table.slots[slot as usize].buffer = ptr::null_mut();
                    *alternatives -= 1;
                    buffer_left = false;
                } else {
                    table.slots[slot as usize].buffer = buffer;
                }
            }
            if new == old {
                c.release(new);
                continue;
            }
            changed += 1;
            if buffer_left {
                // the alternative ships: `ships` ORs it into the formula (false or not)
                table.slots[slot as usize].node = new;
                c.release(old);
                ships.push(slot);
            } else if new == c.zero {
                c.release(new);
                let key = table.slots[slot as usize].key;
                let (node, pending, buffer) = table.remove(slot);
                c.release(node);
                c.release(pending);
                c.release(buffer);
                if let Some(journal) = journal.as_deref_mut() {
                    journal.entry(key).or_insert(true);
                }
            } else {
                table.slots[slot as usize].node = new;
                c.release(old);
            }
        }
        Ok(changed)
    }

    /// Restrict the pending derivation of `slot` (a pending derivation may mention a variable
    /// its entry does not: it is implied by the entry, not built from it).
    fn restrict_pending(c: &Cudd, table: &mut Table, slot: u32, cube: Node) -> Result<(), Oom> {
        let entry = &mut table.slots[slot as usize];
        let pending = entry.pending;
        if pending.is_null() {
            return Ok(());
        }
        let new = c.cofactor(pending, cube)?;
        c.release(pending);
        if new == c.zero {
            c.release(new);
            entry.pending = ptr::null_mut();
        } else {
            entry.pending = new;
        }
        Ok(())
    }

    /// Set the dead variables (CUDD indices `dead`; `cube` the conjunction of their negations)
    /// to false in every link, closure entry, buffer and pending derivation; a closure entry
    /// whose formula changed ships its buffer. Returns the closure
    /// entries changed.
    pub fn delete(&mut self, dead: &[u32], cube: Node) -> Result<i64, Oom> {
        let c = self.cudd;
        self.index()?;
        for &slot in &self.link_queue {
            Self::restrict_pending(&c, &mut self.links, slot, cube)?;
        }
        let waiting: Vec<u32> = self.state.columns.slots().collect();
        for slot in waiting {
            Self::restrict_pending(&c, &mut self.state.closure, slot, cube)?;
        }
        let mut ships = Vec::new();
        let mut no_buffers = 0;
        let links = Self::restrict_table(
            &c,
            &mut self.links,
            dead,
            cube,
            None,
            &mut no_buffers,
            &mut ships,
        )?;
        self.state.stats.links_restricted += links;
        let closure = Self::restrict_table(
            &c,
            &mut self.state.closure,
            dead,
            cube,
            self.state.journal.as_mut(),
            &mut self.state.alternatives,
            &mut ships,
        )?;
        self.state.stats.restricted += closure;
        // alternatives before deletions: every restricted formula whose buffer remains ships
        for slot in ships {
            self.state.ship(&c, slot)?;
        }
        Ok(closure)
    }

    /// Release every reference held.
    pub fn release_all(&mut self) {
        let c = self.cudd;
        for table in [&mut self.links, &mut self.state.closure] {
            for e in table.slots.iter_mut() {
                c.release(e.node);
                c.release(e.pending);
                c.release(e.buffer);
                e.node = ptr::null_mut();
                e.pending = ptr::null_mut();
                e.buffer = ptr::null_mut();
            }
        }
        self.links = Table::new(false);
        self.state.closure = Table::new(true);
        self.link_queue.clear();
        self.state.columns.clear();
        self.state.alternatives = 0;
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        self.release_all();
    }
}
