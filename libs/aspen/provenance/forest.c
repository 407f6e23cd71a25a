/* Inner loops over many BDDs at once, compiled by infra/install.sh and loaded with ctypes:
 * decoding a forest (aspen.provenance.forest_native) and finding the formulas that mention a
 * set of variables (aspen.engine.support).
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
