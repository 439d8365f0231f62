/* The compiled matcher of learned line shapes (see shapes.py).
 *
 * A confirmed shape is a line pattern: literal text, runs of spaces, number tokens and at
 * most one ISO time stamp. shapes.py compiles it to a Python regular expression and reads a
 * block with one re.split; this module reads the same block line by line in one pass and
 * converts the captured numbers as it goes, about ten times faster.
 *
 * It follows only the first path the regular expression would try (every quantifier
 * greedy, every alternative in its order) and never backtracks: a line on which that path
 * fails is declined, and the reader parses declined lines the usual way, which gives what
 * the shape would have given (the shape was trusted because it agrees with the usual
 * parse). Where the first path succeeds, the regular expression returns that same path, so
 * the lines this module accepts and their numbers are the regex's.
 *
 * match(data, pos, ops, ncols) -> (starts, ends, columns, walls)
 *   ops: a tuple of (kind, argument) pairs, in line order:
 *     (0, bytes)  literal text, compared byte for byte
 *     (1, 0|1)    a run of spaces, at least 0 or 1 long, taken whole
 *     (2, slot)   a number, its value stored in column slot (-1: matched, not stored)
 *     (3, 0)      an ISO time stamp, its wall time stored
 *   starts, ends: int64 offsets of each accepted line (end: its newline or the data's end)
 *   columns: float64, ncols values per accepted line (row-major)
 *   walls: float64 wall time of each accepted line (seconds since the epoch; NaN for an
 *          impossible date), where the shape has a time stamp
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#define NUMBER_MAX 512 /* a longer number declines its line (the usual parse reads it) */

enum { OP_LIT = 0, OP_SPACES = 1, OP_NUM = 2, OP_STAMP = 3 };

typedef struct {
    int kind;
    long arg;
    const char *text;
    Py_ssize_t len;
} Op;

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Buf;

static int buf_grow(Buf *b, Py_ssize_t need) {
    if (b->len + need <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + need) cap *= 2;
    char *p = PyMem_Realloc(b->buf, (size_t)cap);
    if (!p) { PyErr_NoMemory(); return -1; }
    b->buf = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (buf_grow(b, n) < 0) return -1;
    memcpy(b->buf + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

static int starts_with(const char *p, const char *end, const char *word) {
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* The number at p, as the regex's first path takes it:
 * (?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|[-+]?(?:inf|Inf)
 * Returns its length, 0 where no alternative matches. */
static Py_ssize_t number_len(const char *p, const char *end) {
    const char *q = p;
    if (q < end && is_digit(*q)) {
        while (q < end && is_digit(*q)) q++;
        if (q < end && *q == '.') {
            q++;
            while (q < end && is_digit(*q)) q++;
        }
    } else if (q + 1 < end && *q == '.' && is_digit(q[1])) {
        q++;
        while (q < end && is_digit(*q)) q++;
    } else {
        if (starts_with(q, end, "nan") || starts_with(q, end, "NaN")) return 3;
        const char *s = q;
        if (s < end && (*s == '-' || *s == '+')) s++;
        if (starts_with(s, end, "inf") || starts_with(s, end, "Inf")) return (s + 3) - p;
        return 0;
    }
    /* the optional exponent: taken where it matches whole */
    if (q < end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        if (e < end && (*e == '-' || *e == '+')) e++;
        if (e < end && is_digit(*e)) {
            while (e < end && is_digit(*e)) e++;
            q = e;
        }
    }
    return q - p;
}

/* Days since 1970-01-01 of a civil date (H. Hinnant's algorithm, as shapes._days). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int64_t digits(const char *p, int n) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) v = v * 10 + (p[i] - '0');
    return v;
}

/* \d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:[.,]\d{1,6})? at p: its length, and its wall time in
 * seconds since the epoch (NaN for an impossible date or time), computed in the order of
 * shapes._stamp_walls so that both give the same double. */
static Py_ssize_t stamp_len(const char *p, const char *end, double *wall) {
    static const char form[] = "dddd-dd-ddTdd:dd:dd";
    static const double scale[] = {1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0};
    if (end - p < 19) return 0;
    for (int i = 0; i < 19; i++) {
        char f = form[i], c = p[i];
        if (f == 'd') { if (!is_digit(c)) return 0; }
        else if (f == 'T') { if (c != ' ' && c != 'T' && c != '_') return 0; }
        else if (c != f) return 0;
    }
    const char *q = p + 19;
    int nfrac = 0;
    if (q + 1 < end && (*q == '.' || *q == ',') && is_digit(q[1])) {
        const char *d = q + 1;
        while (d < end && nfrac < 6 && is_digit(*d)) { d++; nfrac++; }
        q = d;
    }
    int64_t y = digits(p, 4), mo = digits(p + 5, 2), day = digits(p + 8, 2);
    int64_t h = digits(p + 11, 2), mi = digits(p + 14, 2), sec = digits(p + 17, 2);
    if (mo < 1 || mo > 12 || day < 1 || day > 31 || h > 23 || mi > 59 || sec > 59) {
        *wall = Py_NAN;
    } else {
        double w = (double)days_from_civil(y, mo, day) * 86400.0;
        w = w + (double)(h * 3600);
        w = w + (double)(mi * 60);
        w = w + (double)sec;
        if (nfrac) w = w + (double)digits(p + 20, nfrac) / scale[nfrac];
        *wall = w;
    }
    return q - p;
}

/* One line [p, end): 1 and its numbers and stamp where the first path matches it whole. */
static int match_line(const Op *ops, Py_ssize_t nops, const char *p, const char *end,
                      double *vals, double *wall) {
    char tmp[NUMBER_MAX + 1];
    for (Py_ssize_t i = 0; i < nops; i++) {
        const Op *op = &ops[i];
        switch (op->kind) {
        case OP_LIT:
            if (end - p < op->len || memcmp(p, op->text, (size_t)op->len) != 0) return 0;
            p += op->len;
            break;
        case OP_SPACES: {
            const char *q = p;
            while (q < end && *q == ' ') q++;
            if (q - p < op->arg) return 0;
            p = q;
            break;
        }
        case OP_NUM: {
            Py_ssize_t n = number_len(p, end);
            if (n <= 0 || n > NUMBER_MAX) return 0;
            if (op->arg >= 0) {
                memcpy(tmp, p, (size_t)n);
                tmp[n] = '\0';
                char *stop = NULL;
                double v = PyOS_string_to_double(tmp, &stop, NULL);
                if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
                if (stop != tmp + n) return 0;
                vals[op->arg] = v;
            }
            p += n;
            break;
        }
        case OP_STAMP: {
            Py_ssize_t n = stamp_len(p, end, wall);
            if (n <= 0) return 0;
            p += n;
            break;
        }
        default:
            return 0;
        }
    }
    return p == end; /* "$": the line's end */
}

static PyObject *match(PyObject *self, PyObject *args) {
    Py_buffer data;
    (void)self;
    Py_ssize_t pos, ncols;
    PyObject *ops_obj;
    if (!PyArg_ParseTuple(args, "y*nO!n", &data, &pos, &PyTuple_Type, &ops_obj, &ncols))
        return NULL;
    PyObject *result = NULL;
    Op *ops = NULL;
    double *vals = NULL;
    Buf starts = {0}, ends = {0}, cols = {0}, walls = {0};
    Py_ssize_t nops = PyTuple_GET_SIZE(ops_obj);
    int has_stamp = 0;
    if (pos < 0 || pos > data.len || ncols < 0 || ncols > 4096) {
        PyErr_SetString(PyExc_ValueError, "bad position or column count");
        goto done;
    }
    ops = PyMem_Calloc((size_t)(nops ? nops : 1), sizeof(Op));
    vals = PyMem_Calloc((size_t)(ncols ? ncols : 1), sizeof(double));
    if (!ops || !vals) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < nops; i++) {
        PyObject *item = PyTuple_GET_ITEM(ops_obj, i);
        PyObject *arg;
        int kind;
        if (!PyArg_ParseTuple(item, "iO", &kind, &arg)) goto done;
        ops[i].kind = kind;
        if (kind == OP_LIT) {
            char *text;
            if (PyBytes_AsStringAndSize(arg, &text, &ops[i].len) < 0) goto done;
            ops[i].text = text;
        } else {
            ops[i].arg = PyLong_AsLong(arg);
            if (ops[i].arg == -1 && PyErr_Occurred()) goto done;
            if ((kind == OP_NUM && ops[i].arg >= ncols) || kind < 0 || kind > OP_STAMP) {
                PyErr_SetString(PyExc_ValueError, "bad shape operation");
                goto done;
            }
            if (kind == OP_STAMP) has_stamp = 1;
        }
    }
    const char *base = data.buf;
    const char *line = base + pos, *stop = base + data.len;
    double wall = Py_NAN;
    while (line <= stop) {
        const char *nl = memchr(line, '\n', (size_t)(stop - line));
        const char *end = nl ? nl : stop;
        if (end > line || nl) {
            if (match_line(ops, nops, line, end, vals, &wall)) {
                int64_t a = line - base, b = end - base;
                if (buf_put(&starts, &a, 8) < 0 || buf_put(&ends, &b, 8) < 0
                    || buf_put(&cols, vals, ncols * (Py_ssize_t)sizeof(double)) < 0
                    || (has_stamp && buf_put(&walls, &wall, 8) < 0))
                    goto done;
            }
        }
        if (!nl) break;
        line = nl + 1;
    }
    result = Py_BuildValue("(y#y#y#y#)", starts.buf ? starts.buf : "", starts.len,
                           ends.buf ? ends.buf : "", ends.len, cols.buf ? cols.buf : "",
                           cols.len, walls.buf ? walls.buf : "", walls.len);
done:
    PyMem_Free(ops);
    PyMem_Free(vals);
    PyMem_Free(starts.buf);
    PyMem_Free(ends.buf);
    PyMem_Free(cols.buf);
    PyMem_Free(walls.buf);
    PyBuffer_Release(&data);
    return result;
}


/* lines_with(data, markers) -> list of the start offsets of the lines of data holding at
 * least one of the markers (bytes), in order: what markers.hit_lines gives, in one pass
 * over the data instead of one find per marker. A table of the markers' first two bytes
 * rules out almost every position at the cost of one lookup. */
static PyObject *lines_with(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *markers;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*O!", &data, &PyTuple_Type, &markers)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(markers);
    const char **text = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    Py_ssize_t *len = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    unsigned char *pair = PyMem_Calloc(65536, 1);
    if (!text || !len || !pair) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        char *t;
        if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(markers, i), &t, &len[i]) < 0) goto done;
        text[i] = t;
        if (len[i] == 1) {
            for (int b = 0; b < 256; b++) pair[((unsigned char)t[0] << 8) | b] = 1;
        } else if (len[i] > 1) {
            pair[((unsigned char)t[0] << 8) | (unsigned char)t[1]] = 1;
        }
    }
    out = PyList_New(0);
    if (!out) goto done;
    const unsigned char *base = data.buf, *stop = base + data.len, *line = base, *p = base;
    while (p < stop) {
        unsigned char c = *p;
        if (c == '\n') { line = ++p; continue; }
        unsigned next = p + 1 < stop ? p[1] : 0;
        if (pair[(c << 8) | next]) {
            int hit = 0;
            for (Py_ssize_t i = 0; i < n && !hit; i++)
                hit = len[i] > 0 && stop - p >= len[i]
                      && memcmp(p, text[i], (size_t)len[i]) == 0;
            if (hit) {
                PyObject *at = PyLong_FromSsize_t(line - base);
                if (!at || PyList_Append(out, at) < 0) { Py_XDECREF(at); Py_CLEAR(out); goto done; }
                Py_DECREF(at);
                const unsigned char *nl = memchr(p, '\n', (size_t)(stop - p));
                if (!nl) break;
                line = p = nl + 1;
                continue;
            }
        }
        p++;
    }
done:
    PyMem_Free(text);
    PyMem_Free(len);
    PyMem_Free(pair);
    PyBuffer_Release(&data);
    return out;
}

/* thin_keep(keys, values, nseries, out): one thinning pass of budget.thin_mask in one pass
 * over the points, in their order. keys: int64 series number of each point, 0 <= key <
 * nseries; values: float64; out: a writable buffer of one byte per point, set to 1 where
 * the pass keeps the point (it is not cleared first). Per series, in point order, buckets
 * of BUCKET consecutive points keep the first non-NaN point at the bucket's minimum (the
 * first point where the bucket is all NaN) and the last NaN (else the last point at the
 * maximum); every point where the series turns non-finite, and the series' first and last
 * points, are kept too. */
#define THIN_BUCKET 4

typedef struct {
    int64_t count;      /* points of the series seen */
    int64_t last;       /* its last point */
    int64_t low_at, high_at, nan_at, first_at;
    double low, high;
    int prev_bad;
} Series;

static void flush_bucket(Series *s, unsigned char *out) {
    out[s->low_at >= 0 ? s->low_at : s->first_at] = 1;
    out[s->nan_at >= 0 ? s->nan_at : s->high_at] = 1;
}

static PyObject *thin_keep(PyObject *self, PyObject *args) {
    Py_buffer keys, values, out;
    Py_ssize_t nseries;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*nw*", &keys, &values, &nseries, &out)) return NULL;
    PyObject *result = NULL;
    Series *series = NULL;
    Py_ssize_t n = values.len / (Py_ssize_t)sizeof(double);
    if (keys.len != n * (Py_ssize_t)sizeof(int64_t) || out.len < n || nseries < 0) {
        PyErr_SetString(PyExc_ValueError, "thin_keep: buffer sizes do not agree");
        goto done;
    }
    series = PyMem_Calloc((size_t)(nseries ? nseries : 1), sizeof(Series));
    if (!series) { PyErr_NoMemory(); goto done; }
    const int64_t *key = keys.buf;
    const double *val = values.buf;
    unsigned char *keep = out.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = key[i];
        if (k < 0 || k >= nseries) {
            PyErr_SetString(PyExc_ValueError, "thin_keep: a key outside [0, nseries)");
            goto done;
        }
        Series *s = &series[k];
        double v = val[i];
        int is_nan = v != v;
        int bad = is_nan || v == HUGE_VAL || v == -HUGE_VAL;
        if (s->count == 0) keep[i] = 1;
        if (bad && !(s->count > 0 && s->prev_bad)) keep[i] = 1;
        s->prev_bad = bad;
        if (s->count % THIN_BUCKET == 0) {
            s->first_at = i;
            s->low_at = s->nan_at = -1;
            s->high_at = i;
            s->high = is_nan ? HUGE_VAL : v;
        }
        if (is_nan) {
            s->nan_at = i;
        } else {
            if (s->low_at < 0 || v < s->low) { s->low = v; s->low_at = i; }
            if (v >= s->high) { s->high = v; s->high_at = i; }
        }
        s->last = i;
        s->count++;
        if (s->count % THIN_BUCKET == 0) flush_bucket(s, keep);
    }
    for (Py_ssize_t k = 0; k < nseries; k++) {
        Series *s = &series[k];
        if (!s->count) continue;
        if (s->count % THIN_BUCKET) flush_bucket(s, keep);
        keep[s->last] = 1;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(series);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&values);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"match", match, METH_VARARGS,
     "match(data, pos, ops, ncols) -> (starts, ends, columns, walls): the "
     "lines of data from pos that a shape's operations match whole."},
    {"lines_with", lines_with, METH_VARARGS,
     "lines_with(data, markers) -> [offset]: the starts of the lines holding a marker."},
    {"thin_keep", thin_keep, METH_VARARGS,
     "thin_keep(keys, values, nseries, out): mark in out the points one thinning pass "
     "keeps (see budget.thin_mask)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shapematch",
    "The compiled matcher of learned line shapes (see autopsy.readers.ranklogs.shapes).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__shapematch(void) { return PyModule_Create(&module); }
