/* Inner loops over many BDDs at once, compiled by infra/install.sh and loaded with ctypes:
 * encoding and decoding a forest (aspen.provenance.forest_native) and finding the formulas
 * that mention a set of variables (aspen.engine.support).
 *
 * No CUDD header is needed: the CUDD functions come in as pointers bound from the loaded
 * dd.cudd extension, and a DdNode is an opaque pointer (complemented when its low bit is set).
 */
#include <stdint.h>
#include <stdlib.h>

typedef void *(*ite_fn)(void *manager, void *f, void *g, void *h);
typedef void (*ref_fn)(void *node);
typedef void (*deref_fn)(void *manager, void *node);

/* Read `count` unsigned LEB128 varints from buf[pos:len] into out; the position after them,
 * or -1 when the bytes end first or a value does not fit in 63 bits. */
int64_t aspen_varints(const uint8_t *buf, int64_t len, int64_t pos, int64_t count, int64_t *out)
{
    for (int64_t i = 0; i < count; i++) {
        uint64_t value = 0;
        int shift = 0;
        for (;;) {
            if (pos >= len || shift > 56)
                return -1;
            uint8_t byte = buf[pos++];
            value |= (uint64_t)(byte & 0x7F) << shift;
            if (!(byte & 0x80))
                break;
            shift += 7;
        }
        out[i] = (int64_t)value;
    }
    return pos;
}

/* Release table[from:to] (each entry holds one reference). */
void aspen_release(void *manager, deref_fn deref, void **table, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++)
        deref(manager, table[i]);
}

/* Build node k+2 of the table as ite(vars[v], table[high], table[low]) for each (v, low, high)
 * in nodes[3k:3k+3], referencing each. table[0] and table[1] must hold false and true.
 * 0 when done; -1 when a reference dangles (a node may only refer to earlier ones), -2 when
 * CUDD returns NULL (out of memory); on failure nothing stays referenced. */
int64_t aspen_build(void *manager, ite_fn ite, ref_fn ref, deref_fn deref, void **vars,
                    int64_t nvars, const int64_t *nodes, int64_t n, void **table)
{
    for (int64_t k = 0; k < n; k++) {
        int64_t v = nodes[3 * k], low = nodes[3 * k + 1], high = nodes[3 * k + 2];
        int64_t bound = k + 2;
        if (v < 0 || v >= nvars || low < 0 || low >= bound || high < 0 || high >= bound) {
            aspen_release(manager, deref, table, 2, k + 2);
            return -1;
        }
        void *node = ite(manager, vars[v], table[high], table[low]);
        if (node == 0) {
            aspen_release(manager, deref, table, 2, k + 2);
            return -2;
        }
        ref(node);
        table[k + 2] = node;
    }
    return 0;
}

/* Decode many one-formula encodings at once (a view's rows). Row r's bytes end at ends[r]; its
 * node section starts at node_pos[r] (after its names, read by the caller), and its k-th name is
 * variable vars[name_ids[name_start[r] + k]] for k < name_count[r]. Each row is rebuilt node by
 * node as aspen_build does, its root referenced into out[r] and its other nodes released.
 * 0 when done; -1 - r when row r's bytes are corrupt (truncated, trailing data, a dangling
 * reference), INT64_MIN + r when CUDD returns NULL at row r. On failure the roots of rows
 * before r stay in out[0:r], referenced (the caller releases them). */
int64_t aspen_decode_each(void *manager, ite_fn ite, ref_fn ref, deref_fn deref, void **vars,
                          const uint8_t *buf, const int64_t *node_pos, const int64_t *ends,
                          const int64_t *name_start, const int64_t *name_count,
                          const int64_t *name_ids, int64_t rows, void *zero, void *one,
                          void **out)
{
    int64_t cap = 0;
    int64_t *nodes = 0;
    void **table = 0;
    int64_t status = 0;
    for (int64_t r = 0; r < rows && status == 0; r++) {
        int64_t header[1];
        int64_t pos = aspen_varints(buf, ends[r], node_pos[r], 1, header);
        int64_t n = header[0];
        if (pos < 0 || n < 0 || n > (ends[r] - pos) / 3) {
            status = -1 - r;
            break;
        }
        if (n + 2 > cap) {
            int64_t want = 2 * (n + 2);
            int64_t *more_nodes = realloc(nodes, sizeof(int64_t) * 3 * want);
            if (more_nodes)
                nodes = more_nodes;
            void **more_table = realloc(table, sizeof(void *) * want);
            if (more_table)
                table = more_table;
            if (!more_nodes || !more_table) {
                status = INT64_MIN + r;
                break;
            }
            cap = want;
        }
        pos = aspen_varints(buf, ends[r], pos, 3 * n, nodes);
        int64_t root[1];
        if (pos >= 0)
            pos = aspen_varints(buf, ends[r], pos, 1, root);
        if (pos != ends[r] || root[0] >= n + 2) {
            status = -1 - r;
            break;
        }
        /* the row's variables, by its local name index */
        int64_t count = name_count[r];
        for (int64_t k = 0; k < n; k++) {
            int64_t v = nodes[3 * k];
            if (v < 0 || v >= count) {
                status = -1 - r;
                break;
            }
            nodes[3 * k] = name_ids[name_start[r] + v];
        }
        if (status != 0)
            break;
        table[0] = zero;
        table[1] = one;
        int64_t built = aspen_build(manager, ite, ref, deref, vars, INT64_MAX, nodes, n, table);
        if (built != 0) {
            status = built == -1 ? -1 - r : INT64_MIN + r;
            break;
        }
        void *top = table[root[0]];
        ref(top);
        out[r] = top;
        aspen_release(manager, deref, table, 2, n + 2);
    }
    free(nodes);
    free(table);
    return status;
}

/* -- which formulas mention a variable of a set ------------------------------------------- */

typedef unsigned int (*index_fn)(void *node);
typedef void *(*child_fn)(void *node);
typedef int (*perm_fn)(void *manager, int index);

typedef struct {
    void *manager;
    index_fn index_of;
    child_fn then_of, else_of;
    perm_fn level_of;
    const uint8_t *dead;   /* dead[i]: variable index i is in the set */
    int64_t ndead;
    int64_t deepest;       /* the largest level of a variable in the set */
    uintptr_t *keys;       /* memo: open addressing over regular node pointers (0: empty) */
    uint8_t *values;
    uint64_t capacity, used;
} scan_t;

static uint64_t slot_of(const scan_t *s, uintptr_t key)
{
    return ((uint64_t)(key >> 4) * 0x9E3779B97F4A7C15ULL) & (s->capacity - 1);
}

static int memo_grow(scan_t *s)
{
    uint64_t old_capacity = s->capacity;
    uintptr_t *old_keys = s->keys;
    uint8_t *old_values = s->values;
    s->capacity = old_capacity ? 2 * old_capacity : 1 << 16;
    s->keys = calloc(s->capacity, sizeof(uintptr_t));
    s->values = malloc(s->capacity);
    if (!s->keys || !s->values) {
        free(s->keys);
        free(s->values);
        s->keys = old_keys;
        s->values = old_values;
        s->capacity = old_capacity;
        return -1;
    }
    for (uint64_t i = 0; i < old_capacity; i++) {
        if (!old_keys[i])
            continue;
        uint64_t j = slot_of(s, old_keys[i]);
        while (s->keys[j])
            j = (j + 1) & (s->capacity - 1);
        s->keys[j] = old_keys[i];
        s->values[j] = old_values[i];
    }
    free(old_keys);
    free(old_values);
    return 0;
}

/* 1 when the BDD under `node` tests a variable of the set, 0 when not, -1 out of memory. */
static int mentions(scan_t *s, void *node)
{
    uintptr_t key = (uintptr_t)node & ~(uintptr_t)1;  /* complement does not change support */
    unsigned int index = s->index_of((void *)key);
    if (index == 0x7FFFFFFFu)  /* CUDD_CONST_INDEX: a constant */
        return 0;
    if (s->level_of(s->manager, (int)index) > s->deepest)
        return 0;  /* every variable below is lower in the order than the whole set */
    uint64_t j = slot_of(s, key);
    while (s->keys[j]) {
        if (s->keys[j] == key)
            return s->values[j];
        j = (j + 1) & (s->capacity - 1);
    }
    int found = (int64_t)index < s->ndead && s->dead[index];
    if (!found) {
        found = mentions(s, s->then_of((void *)key));
        if (found == 0)
            found = mentions(s, s->else_of((void *)key));
        if (found < 0)
            return -1;
    }
    if (2 * (s->used + 1) > s->capacity && memo_grow(s) < 0)
        return -1;
    j = slot_of(s, key);
    while (s->keys[j])
        j = (j + 1) & (s->capacity - 1);
    s->keys[j] = key;
    s->values[j] = (uint8_t)found;
    s->used++;
    return found;
}

/* out[i] = whether roots[i] mentions a variable whose index i has dead[i] set (ndead flags);
 * `deepest` is the largest level of those variables. 0 when done, -1 out of memory. */
int64_t aspen_mentions(void *manager, index_fn index_of, child_fn then_of, child_fn else_of,
                       perm_fn level_of, const uint8_t *dead, int64_t ndead, int64_t deepest,
                       void **roots, int64_t n, uint8_t *out)
{
    scan_t s = {manager, index_of, then_of, else_of, level_of, dead, ndead, deepest,
                0, 0, 0, 0};
    int64_t status = memo_grow(&s);
    for (int64_t i = 0; status == 0 && i < n; i++) {
        int found = mentions(&s, roots[i]);
        if (found < 0)
            status = -1;
        else
            out[i] = (uint8_t)found;
    }
    free(s.keys);
    free(s.values);
    return status;
}

/* -- encoding a forest ------------------------------------------------------------------------ */

/* The complement-free node list of the forest under roots[0:nroots] (aspen.provenance.bdd's
 * encode_forest format): nodes[3k:3k+3] = (variable, low ref, high ref) of node k, children
 * first, the low subtree before the high one; refs are 0 = false, 1 = true, k + 2 = node k.
 * A CUDD node reached through a complemented edge and through a regular one is two nodes.
 * Variables are numbered by first appearance: local[i] is the CUDD index of variable i
 * (`nindices` bounds the CUDD indices). root_refs[i] is the ref of roots[i].
 * The number of nodes; -1 out of memory; -2 more than `capacity` nodes; -3 a variable index
 * not below `nindices`. */
typedef struct {
    uintptr_t *keys;  /* open addressing over node pointers with their complement bit (0: empty) */
    int64_t *values;
    uint64_t capacity, used;
} refs_t;

static uint64_t ref_slot(const refs_t *m, uintptr_t key)
{
    return ((uint64_t)(key >> 3) * 0x9E3779B97F4A7C15ULL) & (m->capacity - 1);
}

static int64_t ref_get(const refs_t *m, uintptr_t key)
{
    uint64_t j = ref_slot(m, key);
    while (m->keys[j]) {
        if (m->keys[j] == key)
            return m->values[j];
        j = (j + 1) & (m->capacity - 1);
    }
    return -1;
}

static void ref_insert(refs_t *m, uintptr_t key, int64_t value)
{
    uint64_t j = ref_slot(m, key);
    while (m->keys[j])
        j = (j + 1) & (m->capacity - 1);
    m->keys[j] = key;
    m->values[j] = value;
    m->used++;
}

/* Double the table (or make its first one); -1 out of memory, the table unchanged. */
static int ref_grow(refs_t *m)
{
    refs_t grown = {0, 0, m->capacity ? 2 * m->capacity : 1 << 10, 0};
    grown.keys = calloc(grown.capacity, sizeof(uintptr_t));
    grown.values = malloc(grown.capacity * sizeof(int64_t));
    if (!grown.keys || !grown.values) {
        free(grown.keys);
        free(grown.values);
        return -1;
    }
    for (uint64_t i = 0; i < m->capacity; i++)
        if (m->keys[i])
            ref_insert(&grown, m->keys[i], m->values[i]);
    free(m->keys);
    free(m->values);
    *m = grown;
    return 0;
}

static int ref_put(refs_t *m, uintptr_t key, int64_t value)
{
    if (2 * (m->used + 1) > m->capacity && ref_grow(m) < 0)
        return -1;
    ref_insert(m, key, value);
    return 0;
}

#define CONST_INDEX 0x7FFFFFFFu

/* The ref of a node already listed, or of a constant; -1 when not listed yet. */
static int64_t known_ref(const refs_t *m, index_fn index_of, uintptr_t node)
{
    if (index_of((void *)(node & ~(uintptr_t)1)) == CONST_INDEX)
        return (node & 1) ? 0 : 1;  /* BDD constants: the one node, false is its complement */
    return ref_get(m, node);
}

/* One walk over CUDD nodes: what aspen_forest_nodes and aspen_encode_each share. */
typedef struct {
    index_fn index_of;
    child_fn then_of, else_of;
    refs_t refs;             /* node (with its complement bit) → its ref */
    int32_t *local_of;       /* CUDD index → 1 + its local number (0: not seen) */
    int64_t nindices;
    int64_t *local;          /* local number → CUDD index */
    int64_t nlocal;
    uintptr_t *stack;        /* node pointers shifted left by one; low bit 1: expanded */
    int64_t stack_capacity;
    int64_t *nodes;          /* (local variable, low ref, high ref) per listed node */
    int64_t n, capacity;
    int growable;            /* nodes may be reallocated (else: -2 past capacity) */
} walk_t;

static int walk_open(walk_t *w, int64_t nindices)
{
    w->nindices = nindices;
    w->local_of = calloc(nindices > 0 ? (size_t)nindices : 1, sizeof(int32_t));
    w->stack_capacity = 1024;
    w->stack = malloc(w->stack_capacity * sizeof(uintptr_t));
    if (!w->local_of || !w->stack || ref_grow(&w->refs) < 0)
        return -1;
    return 0;
}

static void walk_close(walk_t *w)
{
    free(w->refs.keys);
    free(w->refs.values);
    free(w->local_of);
    free(w->stack);
}

/* Forget the nodes and variables listed so far (the tables keep their memory unless large). */
static int walk_reset(walk_t *w)
{
    for (int64_t i = 0; i < w->nlocal; i++)
        w->local_of[w->local[i]] = 0;
    w->nlocal = 0;
    w->n = 0;
    if (w->refs.capacity > (1 << 12)) {  /* a large forest passed: start small again */
        free(w->refs.keys);
        free(w->refs.values);
        w->refs = (refs_t){0, 0, 0, 0};
        return ref_grow(&w->refs);
    }
    for (uint64_t j = 0; j < w->refs.capacity; j++)
        w->refs.keys[j] = 0;
    w->refs.used = 0;
    return 0;
}

/* List the nodes under `root` not listed yet, children first, the low subtree before the high
 * one; the ref of root, or -1 out of memory, -2 past a fixed capacity, -3 a variable index
 * not below nindices. */
static int64_t walk_root(walk_t *w, uintptr_t root)
{
    int64_t found = known_ref(&w->refs, w->index_of, root);
    if (found >= 0)
        return found;
    int64_t top = 0;
    w->stack[top++] = root << 1;
    while (top > 0) {
        uintptr_t entry = w->stack[--top];
        uintptr_t node = entry >> 1;
        if (ref_get(&w->refs, node) >= 0)
            continue;
        uintptr_t regular = node & ~(uintptr_t)1, negated = node & 1;
        uintptr_t high = (uintptr_t)w->then_of((void *)regular) ^ negated;
        uintptr_t low = (uintptr_t)w->else_of((void *)regular) ^ negated;
        if (!(entry & 1)) {
            if (top + 3 > w->stack_capacity) {
                uintptr_t *grown = realloc(w->stack, 2 * w->stack_capacity * sizeof(uintptr_t));
                if (!grown)
                    return -1;
                w->stack = grown;
                w->stack_capacity *= 2;
            }
            w->stack[top++] = (node << 1) | 1;
            if (known_ref(&w->refs, w->index_of, high) < 0)
                w->stack[top++] = high << 1;
            if (known_ref(&w->refs, w->index_of, low) < 0)
                w->stack[top++] = low << 1;
            continue;
        }
        if (w->n >= w->capacity) {
            if (!w->growable)
                return -2;
            int64_t wanted = w->capacity ? 2 * w->capacity : 256;
            int64_t *grown = realloc(w->nodes, 3 * wanted * sizeof(int64_t));
            if (!grown)
                return -1;
            w->nodes = grown;
            w->capacity = wanted;
        }
        unsigned int index = w->index_of((void *)regular);
        if ((int64_t)index >= w->nindices)
            return -3;
        if (!w->local_of[index]) {
            w->local[w->nlocal] = index;
            w->local_of[index] = (int32_t)++w->nlocal;
        }
        int64_t *at = w->nodes + 3 * w->n;
        at[0] = w->local_of[index] - 1;
        at[1] = known_ref(&w->refs, w->index_of, low);
        at[2] = known_ref(&w->refs, w->index_of, high);
        if (ref_put(&w->refs, node, w->n + 2) < 0)
            return -1;
        w->n++;
    }
    return known_ref(&w->refs, w->index_of, root);
}

int64_t aspen_forest_nodes(index_fn index_of, child_fn then_of, child_fn else_of,
                           void **roots, int64_t nroots, int64_t nindices,
                           int64_t *nodes, int64_t capacity, int64_t *root_refs,
                           int64_t *local, int64_t *nlocal)
{
    walk_t w = {index_of, then_of, else_of, {0, 0, 0, 0}, 0, 0, local, 0, 0, 0,
                nodes, 0, capacity, 0};
    int64_t status = walk_open(&w, nindices);
    for (int64_t r = 0; r < nroots && status == 0; r++) {
        int64_t ref = walk_root(&w, (uintptr_t)roots[r]);
        if (ref < 0)
            status = ref;
        else
            root_refs[r] = ref;
    }
    walk_close(&w);
    *nlocal = w.nlocal;
    return status < 0 ? status : w.n;
}

static uint8_t *put_varint(uint8_t *out, uint64_t value)
{
    while (value >= 0x80) {
        *out++ = (uint8_t)(value & 0x7F) | 0x80;
        value >>= 7;
    }
    *out++ = (uint8_t)value;
    return out;
}

/* Write the node count, the nodes with their variables renumbered by rank[local variable],
 * then (when with_count) the root count and the root refs, as LEB128 varints; out needs
 * 10 bytes per value. The number of bytes written. */
int64_t aspen_forest_bytes(const int64_t *nodes, int64_t n, const int64_t *rank,
                           const int64_t *root_refs, int64_t nroots, int64_t with_count,
                           uint8_t *out)
{
    uint8_t *at = put_varint(out, (uint64_t)n);
    for (int64_t k = 0; k < n; k++) {
        at = put_varint(at, (uint64_t)rank[nodes[3 * k]]);
        at = put_varint(at, (uint64_t)nodes[3 * k + 1]);
        at = put_varint(at, (uint64_t)nodes[3 * k + 2]);
    }
    if (with_count)
        at = put_varint(at, (uint64_t)nroots);
    for (int64_t r = 0; r < nroots; r++)
        at = put_varint(at, (uint64_t)root_refs[r]);
    return at - out;
}

/* A local variable and its CUDD level, to sort a formula's variables top level first. */
typedef struct {
    int level;
    int64_t variable;
} leveled_t;

static int by_level(const void *a, const void *b)
{
    int x = ((const leveled_t *)a)->level, y = ((const leveled_t *)b)->level;
    return (x > y) - (x < y);
}

/* Encode each of roots[0:nroots] on its own (aspen.provenance.bdd's encode format after the
 * names): the node count, the nodes with variables numbered top level first, the root ref.
 * Roots are encoded in order while their bytes fit: the bytes of root r end at ends[r] in
 * out (out_capacity bytes), and its variables' CUDD indices, top level first (levels from
 * level_of(manager, index)), end at var_ends[r] in vars (vars_capacity entries).
 * The number of roots encoded (0: the first one does not fit); -1 out of memory; -3 a
 * variable index not below nindices. */
int64_t aspen_encode_each(index_fn index_of, child_fn then_of, child_fn else_of,
                          perm_fn level_of, void *manager,
                          void **roots, int64_t nroots, int64_t nindices,
                          uint8_t *out, int64_t out_capacity, int64_t *ends,
                          int64_t *vars, int64_t vars_capacity, int64_t *var_ends)
{
    int64_t *local = malloc((nindices > 0 ? (size_t)nindices : 1) * sizeof(int64_t));
    int64_t *rank = malloc((nindices > 0 ? (size_t)nindices : 1) * sizeof(int64_t));
    leveled_t *order = malloc((nindices > 0 ? (size_t)nindices : 1) * sizeof(leveled_t));
    walk_t w = {index_of, then_of, else_of, {0, 0, 0, 0}, 0, 0, local, 0, 0, 0,
                0, 0, 0, 1};
    int64_t status = (local && rank && order) ? walk_open(&w, nindices) : -1;
    int64_t done = 0, at = 0, var_at = 0;
    for (; done < nroots && status == 0; done++) {
        if (done > 0 && walk_reset(&w) < 0) {
            status = -1;
            break;
        }
        int64_t root_ref = walk_root(&w, (uintptr_t)roots[done]);
        if (root_ref < 0) {
            status = root_ref;
            break;
        }
        if (at + 10 * (3 * w.n + 2) > out_capacity || var_at + w.nlocal > vars_capacity)
            break;  /* the caller continues from here with larger buffers */
        for (int64_t i = 0; i < w.nlocal; i++)
            order[i] = (leveled_t){level_of(manager, (int)local[i]), i};
        qsort(order, (size_t)w.nlocal, sizeof(leveled_t), by_level);
        for (int64_t i = 0; i < w.nlocal; i++) {
            rank[order[i].variable] = i;
            vars[var_at++] = local[order[i].variable];
        }
        uint8_t *cursor = put_varint(out + at, (uint64_t)w.n);
        for (int64_t k = 0; k < w.n; k++) {
            cursor = put_varint(cursor, (uint64_t)rank[w.nodes[3 * k]]);
            cursor = put_varint(cursor, (uint64_t)w.nodes[3 * k + 1]);
            cursor = put_varint(cursor, (uint64_t)w.nodes[3 * k + 2]);
        }
        cursor = put_varint(cursor, (uint64_t)root_ref);
        at = cursor - out;
        ends[done] = at;
        var_ends[done] = var_at;
    }
    walk_close(&w);
    free(w.nodes);
    free(local);
    free(rank);
    free(order);
    return status < 0 ? status : done;
}
