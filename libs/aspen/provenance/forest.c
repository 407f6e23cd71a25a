/* The inner loops of decoding a BDD forest (aspen.provenance.forest_native), compiled by
 * infra/install.sh and loaded with ctypes.
 *
 * No CUDD header is needed: the CUDD functions come in as pointers bound from the loaded
 * dd.cudd extension, and a DdNode is an opaque pointer (complemented when its low bit is set).
 */
#include <stdint.h>

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
