//! Differential Dataflow peer of Aspen's engine benchmark (`aspen.bench.engine_peers`).
//!
//! Usage: `dataflow_peer WORKLOAD [--views reachable,min_cost]`
//!
//! The workload file has one batch after another: a line `B <batch>`, then one line per update,
//! `+ src dst cost` (insert the directed link) or `- src dst` (delete every live instance of the
//! link, as Aspen does; a trailing cost is ignored). Node ids are strings, interned to u32.
//! Costs are floats >= 0, held as integers: `round(cost * 1000)` (u64), so sums are exact.
//!
//! Views, maintained incrementally on one worker thread:
//! * `reachable(src,dst)`: the transitive closure, by `iterate` with `distinct`;
//! * `min_cost(src,dst,cost)`: the least path cost, by `iterate` with a `reduce` taking the
//!   minimum per (src,dst). As in Aspen, `src == dst` only through a self-loop link (a derived
//!   path ending where it started is dropped; with costs >= 0 it never lowers another pair).
//!
//! Per batch one JSON line on stdout: `batch`, `seconds` (feed the updates, advance the input,
//! step until the probe passes the batch), the row count and checksum of each view (`null` when
//! not maintained) and `peak_rss_mb` (VmHWM so far). The checksum of a view is the wrapping
//! (mod 2^64) sum over its rows of FNV-1a 64 of the UTF-8 text `src\tdst` (reachable) or
//! `src\tdst\tcost_scaled` (min_cost, the scaled integer cost in decimal); it is linear in the
//! rows, so it is kept from the output's differences alone.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::rc::Rc;
use std::time::Instant;

use differential_dataflow::input::Input;
use differential_dataflow::operators::Iterate;
use timely::dataflow::operators::probe::Handle;

type Node = u32;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 continued from `state` over `bytes`.
fn fnv1a(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= b as u64;
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// One update of the workload: insert or delete the link (src, dst) with its scaled cost.
#[derive(Clone, Copy)]
enum Update {
    Insert(Node, Node, u64),
    Delete(Node, Node),
}

/// The node names (index = interned id) and, per node, the FNV state after `name\t`.
struct Names {
    ids: HashMap<String, Node>,
    names: Vec<String>,
    prefix: Vec<u64>,
}

impl Names {
    fn intern(&mut self, name: &str) -> Node {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as Node;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        self.prefix.push(fnv1a(fnv1a(FNV_OFFSET, name.as_bytes()), b"\t"));
        id
    }

    /// FNV-1a 64 of `src\tdst`.
    fn pair_hash(&self, src: Node, dst: Node) -> u64 {
        fnv1a(self.prefix[src as usize], self.names[dst as usize].as_bytes())
    }

    /// FNV-1a 64 of `src\tdst\tcost`.
    fn cost_hash(&self, src: Node, dst: Node, cost: u64) -> u64 {
        let state = fnv1a(self.pair_hash(src, dst), b"\t");
        fnv1a(state, cost.to_string().as_bytes())
    }
}

fn fail(message: &str) -> ! {
    eprintln!("dataflow_peer: {message}");
    std::process::exit(2);
}

/// The batches of the workload file, with the node names interned.
fn read_workload(path: &str) -> (Vec<Vec<Update>>, Names) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| fail(&format!("cannot open {path}: {e}")));
    let mut names = Names { ids: HashMap::new(), names: Vec::new(), prefix: Vec::new() };
    let mut batches: Vec<Vec<Update>> = Vec::new();
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line.unwrap_or_else(|e| fail(&format!("cannot read {path}: {e}")));
        let fields: Vec<&str> = line.split_whitespace().collect();
        let bad = || -> ! { fail(&format!("{path}:{}: cannot parse {line:?}", number + 1)) };
        match fields.as_slice() {
            [] => {}
            ["B", _] => batches.push(Vec::new()),
            ["+", src, dst, cost] => {
                let cost: f64 = cost.parse().unwrap_or_else(|_| bad());
                if !(cost >= 0.0 && cost.is_finite()) {
                    bad();
                }
                let update = Update::Insert(names.intern(src), names.intern(dst), (cost * 1000.0).round() as u64);
                batches.last_mut().unwrap_or_else(|| bad()).push(update);
            }
            ["-", src, dst] | ["-", src, dst, _] => {
                let update = Update::Delete(names.intern(src), names.intern(dst));
                batches.last_mut().unwrap_or_else(|| bad()).push(update);
            }
            _ => bad(),
        }
    }
    (batches, names)
}

/// Peak resident set size of this process so far, in MB (VmHWM; 0 where /proc is missing).
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A view's row count and checksum, kept from its output differences.
#[derive(Default)]
struct Tally {
    rows: i64,
    checksum: u64,
}

impl Tally {
    fn add(&mut self, hash: u64, diff: isize) {
        self.rows += diff as i64;
        self.checksum = self.checksum.wrapping_add(hash.wrapping_mul(diff as i64 as u64));
    }
}

fn json_of(tally: &Option<Rc<RefCell<Tally>>>) -> (String, String) {
    match tally {
        Some(t) => {
            let t = t.borrow();
            (t.rows.to_string(), t.checksum.to_string())
        }
        None => ("null".to_string(), "null".to_string()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut path: Option<String> = None;
    let mut views = "reachable,min_cost".to_string();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--views" => views = it.next().unwrap_or_else(|| fail("--views needs a value")),
            _ if path.is_none() && !arg.starts_with("--") => path = Some(arg),
            _ => fail(&format!("unexpected argument {arg:?}; usage: dataflow_peer WORKLOAD [--views reachable,min_cost]")),
        }
    }
    let path = path.unwrap_or_else(|| fail("usage: dataflow_peer WORKLOAD [--views reachable,min_cost]"));
    let wanted: Vec<String> = views.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    for view in &wanted {
        if view != "reachable" && view != "min_cost" {
            fail(&format!("unknown view {view:?}; choose among reachable, min_cost"));
        }
    }
    let (do_reach, do_cost) = (wanted.iter().any(|v| v == "reachable"), wanted.iter().any(|v| v == "min_cost"));
    if !do_reach && !do_cost {
        fail("--views names no view");
    }
    let (batches, names) = read_workload(&path);

    timely::execute_directly(move |worker| {
        let names = Rc::new(names);
        let reach_tally = do_reach.then(|| Rc::new(RefCell::new(Tally::default())));
        let cost_tally = do_cost.then(|| Rc::new(RefCell::new(Tally::default())));
        let probe = Handle::new();

        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, links) = scope.new_collection::<(Node, Node, u64), isize>();

            if let Some(tally) = reach_tally.clone() {
                let names = names.clone();
                let edges = links.clone().map(|(s, d, _)| (s, d)).distinct();
                let by_src = edges.clone().arrange_by_key();
                edges
                    .clone()
                    .iterate(|inner_scope, inner| {
                        let by_src = by_src.enter(inner_scope);
                        let edges = edges.enter(inner_scope);
                        inner
                            .map(|(x, z)| (z, x))
                            .join_core(by_src, |_z, x, y| Some((*x, *y)))
                            .concat(edges)
                            .distinct()
                    })
                    .inspect(move |((x, y), _time, diff)| {
                        tally.borrow_mut().add(names.pair_hash(*x, *y), *diff)
                    })
                    .probe_with(&probe);
            }

            if let Some(tally) = cost_tally.clone() {
                let names = names.clone();
                // the cheapest live link per (src, dst): the one-link paths
                let direct = links
                    .map(|(s, d, c)| ((s, d), c))
                    .reduce(|_key, costs, out| out.push((*costs[0].0, 1isize)));
                let by_src = direct.clone().map(|((s, d), c)| (s, (d, c))).arrange_by_key();
                direct
                    .clone()
                    .iterate(|inner_scope, inner| {
                        let by_src = by_src.enter(inner_scope);
                        let direct = direct.enter(inner_scope);
                        inner
                            .map(|((x, z), c)| (z, (x, c)))
                            .join_core(by_src, |_z, &(x, c1), &(y, c2)| {
                                (x != y).then_some(((x, y), c1 + c2))
                            })
                            .concat(direct)
                            .reduce(|_key, costs, out| out.push((*costs[0].0, 1isize)))
                    })
                    .inspect(move |(((x, y), c), _time, diff)| {
                        tally.borrow_mut().add(names.cost_hash(*x, *y, *c), *diff)
                    })
                    .probe_with(&probe);
            }
            input
        });

        let stdout = std::io::stdout();
        let mut live: HashMap<(Node, Node), Vec<u64>> = HashMap::new();
        for (number, updates) in batches.iter().enumerate() {
            let start = Instant::now();
            for update in updates {
                match *update {
                    Update::Insert(s, d, c) => {
                        live.entry((s, d)).or_default().push(c);
                        input.insert((s, d, c));
                    }
                    Update::Delete(s, d) => {
                        for c in live.remove(&(s, d)).unwrap_or_default() {
                            input.remove((s, d, c));
                        }
                    }
                }
            }
            input.advance_to(number as u64 + 1);
            input.flush();
            worker.step_while(|| probe.less_than(input.time()));
            let seconds = start.elapsed().as_secs_f64();
            let (reach_rows, reach_sum) = json_of(&reach_tally);
            let (cost_rows, cost_sum) = json_of(&cost_tally);
            let mut out = stdout.lock();
            let line = format!(
                "{{\"batch\": {number}, \"updates\": {}, \"seconds\": {seconds:.9}, \"reachable\": {reach_rows}, \
                 \"reachable_checksum\": {reach_sum}, \"min_cost\": {cost_rows}, \"min_cost_checksum\": {cost_sum}, \
                 \"peak_rss_mb\": {:.1}}}",
                updates.len(),
                peak_rss_mb()
            );
            if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                std::process::exit(1); // the reader went away
            }
        }
    });
}
