/*
 * The builtin engine's compiled hot loop (issue 19): one client connection running a sysbench OLTP event program
 * (load/oltp.py's blocks over load/oltp.py's prepared statements) with the GIL released, through the MariaDB
 * client library (libmariadb). What reaches the server is what the Python loop sends: the same prepared
 * statements in the same order, the same per-event mix; the random ids follow sysbench's distributions as
 * load/randgen.py draws them (same integer arithmetic), from a xoshiro256** generator seeded by the caller.
 *
 * Python keeps the control (load/hotloop.py): it prepares the statements, gives the program, calls run(seconds)
 * in a loop and handles errors (retry, reconnect, abort) as the Python loop does. The worker's reporter reads the
 * cumulative counters and takes the per-event latencies (ns) every second: take() swaps the buffer under a mutex,
 * so every event's latency lands in exactly one second's histogram.
 *
 * Every number and index from Python is checked before it indexes an array, and a program() that fails leaves
 * the previous program in place. A call that releases the GIL (connect, prepare, query, run) marks the connection
 * busy: meanwhile a call from another thread that would use or free what it uses raises RuntimeError; take() and
 * stop() are the two that may come then (the reporter's and the deactivation's).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <math.h>
#include <mysql.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- random numbers: xoshiro256** (seeded through splitmix64) ---------------------------------------------- */

typedef struct {
    uint64_t s[4];
} rng_t;

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng_t *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static void rng_seed(rng_t *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        r->s[i] = z ^ (z >> 31);
    }
}

static inline double rng_double(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* uniform in [0, n): Lemire's multiply-shift with rejection, unbiased */
static uint64_t rng_below(rng_t *r, uint64_t n) {
    unsigned __int128 m = (unsigned __int128)rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -n % n;
        while (low < threshold) {
            m = (unsigned __int128)rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* ---- sysbench's --rand-type distributions (load/randgen.py draw(), value for value in distribution) ---------- */

enum { D_UNIFORM = 0, D_GAUSSIAN = 1, D_PARETO = 2, D_SPECIAL = 3 };

typedef struct {
    int kind;
    int64_t a, b;
    int iters;    /* rand_spec_iter */
    double power; /* pareto: log(h) / log(1 - h) */
    int64_t pct;  /* rand_spec_pct */
    int64_t res;  /* rand_spec_res */
} dist_t;

static int64_t gaussian(rng_t *r, int64_t a, int64_t t, int iters) {
    double s = 0.0;
    for (int i = 0; i < iters; i++) s += rng_double(r);
    return a + (int64_t)floor(s * (double)t / iters);
}

static int64_t draw(const dist_t *d, rng_t *r) {
    if (d->b <= d->a) return d->a;
    int64_t a = d->a, t = d->b - d->a;
    switch (d->kind) {
    case D_GAUSSIAN:
        return gaussian(r, a, t, d->iters);
    case D_PARETO:
        return a + (int64_t)floor((double)(t + 1) * pow(rng_double(r), d->power));
    case D_SPECIAL: {
        int64_t range_size = t * (100 / (100 - d->res)); /* C integer division, as sb_rand_special() */
        int64_t res = range_size > 0 ? (int64_t)rng_below(r, (uint64_t)range_size) : 0;
        if (res < t) return gaussian(r, a, t, d->iters);
        int64_t span = t * d->pct / 100;
        if (span < 1) span = 1;
        return a + res % span + (t / 2 - t * d->pct / 200);
    }
    default:
        return a + (int64_t)rng_below(r, (uint64_t)(t + 1));
    }
}

/* ---- the program -------------------------------------------------------------------------------------------- */

/* op kinds (load/hotloop.py OPS) */
enum { OP_OTHER = 0, OP_POINT = 1, OP_RANGE = 2, OP_NON_INDEX = 3, OP_DELETE_INSERT = 4 };
/* what a statement counts as, sysbench's r/w/o */
enum { C_READ = 0, C_WRITE = 1, C_OTHER = 2 };
#define NKINDS 5
#define NCOUNTS 3
/* ids, their bounds and range_extra stay below 2^55 so that sysbench's arithmetic on them (t * 100, t * pct,
   i1 + range_extra) cannot overflow int64 */
#define ID_LIMIT ((int64_t)1 << 55)

typedef struct {
    int kind, count, counts_as;
    int *stmt;   /* per table: index into the connection's statements */
    int *stmt2;  /* OP_DELETE_INSERT: the inserts' */
} op_t;

/* the values a statement's parameters are bound to, once (sysbench binds once too: an execution then sends
   only the values, not the types again) */
typedef struct {
    long long i1, i2;
    unsigned long c_len, pad_len;
    char c_buf[256], pad_buf[256];
} values_t;

typedef struct {
    PyObject_HEAD
    MYSQL *m;
    MYSQL_STMT **stmts; /* NULL: a statement the server will not prepare, sent as text (texts[i]) */
    char **texts;
    unsigned long *text_lens;
    MYSQL_BIND (*binds)[4]; /* per statement */
    int nstmts;
    op_t *ops;
    int nops;
    int ntables;
    int64_t range_extra; /* range_size - 1 */
    dist_t ids;
    rng_t rng;
    char *c_tpl, *pad_tpl;
    size_t c_len, pad_len;
    values_t v;
    /* published to the reporter under mu */
    pthread_mutex_t mu;
    unsigned long long events, reads, writes, other;
    int64_t *lat;
    size_t nlat, caplat;
    /* open loop (run() given a DueQueue): service times beside the latencies (those count from the due time),
       transactions over the queue's latency limit (late) and skipped for it */
    int64_t *svc;
    size_t nsvc, capsvc;
    unsigned long long late, skipped;
    /* set by stop() from any thread while run() reads it without the GIL: only through __atomic builtins */
    int stop;
    /* a call is inside with the GIL released (enter()/leave(), __atomic builtins): the others must not touch or
       free the connection, its statements or its program meanwhile */
    int busy;
    int ready; /* __init__ succeeded once: a second one would leak or replace the connection */
} Conn;

static PyObject *HotError;

/* ---- open loop: the due times (intended starts) a group's connections in this process serve ----------------- */

/* Python draws the arrival times (core/schedule.py) and push()es them ahead of the clock; the connections claim
   them in order under mu, each one at most once; a claim skips (and counts) those already later than the
   latency limit, as pgbench's --latency-limit does. backlog() and drop() are the reporter's. */
typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    int64_t *due; /* due[head..tail): pushed, not claimed; ascending */
    size_t head, tail, cap;
    int64_t limit_ns; /* 0: none */
} DueQueue;

static PyObject *DueQueue_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    DueQueue *q = (DueQueue *)type->tp_alloc(type, 0);
    if (q) pthread_mutex_init(&q->mu, NULL);
    return (PyObject *)q;
}

/* DueQueue(limit_ns) */
static int DueQueue_init(DueQueue *q, PyObject *args, PyObject *kw) {
    long long limit = 0;
    if (!PyArg_ParseTuple(args, "|L", &limit)) return -1;
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "the latency limit must not be negative");
        return -1;
    }
    q->limit_ns = limit;
    return 0;
}

static void DueQueue_dealloc(DueQueue *q) {
    PyMem_RawFree(q->due);
    pthread_mutex_destroy(&q->mu);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

/* push(times: bytes of int64 ns, ascending and after those pushed before) */
static PyObject *DueQueue_push(DueQueue *q, PyObject *args) {
    const char *buf;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#", &buf, &len)) return NULL;
    if (len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "push(times): whole int64 values");
        return NULL;
    }
    size_t n = (size_t)len / sizeof(int64_t);
    const int64_t *t = (const int64_t *)buf;
    for (size_t i = 1; i < n; i++) {
        if (t[i] < t[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "push(times): not ascending");
            return NULL;
        }
    }
    pthread_mutex_lock(&q->mu);
    if (n && q->tail > q->head && t[0] < q->due[q->tail - 1]) {
        pthread_mutex_unlock(&q->mu);
        PyErr_SetString(PyExc_ValueError, "push(times): before the times already pushed");
        return NULL;
    }
    if (q->head) { /* claimed ones are gone: the pending to the front */
        memmove(q->due, q->due + q->head, (q->tail - q->head) * sizeof(int64_t));
        q->tail -= q->head;
        q->head = 0;
    }
    if (q->tail + n > q->cap) {
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->tail + n) cap *= 2;
        int64_t *grown = PyMem_RawRealloc(q->due, cap * sizeof(int64_t));
        if (!grown) {
            pthread_mutex_unlock(&q->mu);
            return PyErr_NoMemory();
        }
        q->due = grown;
        q->cap = cap;
    }
    memcpy(q->due + q->tail, t, n * sizeof(int64_t));
    q->tail += n;
    pthread_mutex_unlock(&q->mu);
    Py_RETURN_NONE;
}

/* the number of pending due times <= now (under mu) */
static size_t due_by(DueQueue *q, int64_t now) {
    size_t lo = q->head, hi = q->tail;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (q->due[mid] <= now) lo = mid + 1;
        else hi = mid;
    }
    return lo - q->head;
}

/* backlog(now_ns) -> (due and not started, how late the oldest of them is, ns; 0 without a backlog) */
static PyObject *DueQueue_backlog(DueQueue *q, PyObject *args) {
    long long now;
    if (!PyArg_ParseTuple(args, "L", &now)) return NULL;
    pthread_mutex_lock(&q->mu);
    size_t n = due_by(q, now);
    long long lag = n ? now - q->due[q->head] : 0;
    pthread_mutex_unlock(&q->mu);
    return Py_BuildValue("(nL)", (Py_ssize_t)n, lag);
}

/* drop(now_ns) -> how many due by then were dropped unclaimed (the warm-up's backlog) */
static PyObject *DueQueue_drop(DueQueue *q, PyObject *args) {
    long long now;
    if (!PyArg_ParseTuple(args, "L", &now)) return NULL;
    pthread_mutex_lock(&q->mu);
    size_t n = due_by(q, now);
    q->head += n;
    pthread_mutex_unlock(&q->mu);
    return PyLong_FromSize_t(n);
}

/* pending() -> pushed and not claimed */
static PyObject *DueQueue_pending(DueQueue *q, PyObject *noargs) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->tail - q->head;
    pthread_mutex_unlock(&q->mu);
    return PyLong_FromSize_t(n);
}

/* a connection free at `now` claims the next due time (skipping, and counting in *skipped, those later than the
   limit); 0 when none is pushed */
static int due_claim(DueQueue *q, int64_t now, int64_t *due, unsigned long long *skipped) {
    int got = 0;
    pthread_mutex_lock(&q->mu);
    while (q->head < q->tail && q->limit_ns && now - q->due[q->head] > q->limit_ns) {
        q->head++;
        (*skipped)++;
    }
    if (q->head < q->tail) {
        *due = q->due[q->head++];
        got = 1;
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

static PyMethodDef DueQueue_methods[] = {
    {"push", (PyCFunction)DueQueue_push, METH_VARARGS, "push(times): due times, int64 ns, ascending"},
    {"backlog", (PyCFunction)DueQueue_backlog, METH_VARARGS, "backlog(now) -> (due and not started, lag ns)"},
    {"drop", (PyCFunction)DueQueue_drop, METH_VARARGS, "drop(now) -> how many due by now were dropped"},
    {"pending", (PyCFunction)DueQueue_pending, METH_NOARGS, "pushed and not claimed"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DueQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tunebench.load._hotloop.DueQueue",
    .tp_basicsize = sizeof(DueQueue),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The due times of an open-loop group's connections in this process.",
    .tp_new = DueQueue_new,
    .tp_init = (initproc)DueQueue_init,
    .tp_dealloc = (destructor)DueQueue_dealloc,
    .tp_methods = DueQueue_methods,
};

/* a call that releases the GIL, or changes what one uses: refused while another thread's call is inside */
static int enter(Conn *c) {
    int idle = 0;
    if (__atomic_compare_exchange_n(&c->busy, &idle, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 1;
    PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread's call");
    return 0;
}

static void leave(Conn *c) { __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE); }

/* the same check for a call that keeps the GIL but reads or frees what a busy call uses */
static int idle(Conn *c) {
    if (!__atomic_load_n(&c->busy, __ATOMIC_ACQUIRE)) return 1;
    PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread's call");
    return 0;
}

static PyObject *raise_mysql(unsigned int err, const char *msg) {
    PyObject *args = Py_BuildValue("(Is)", err, msg);
    if (args) {
        PyErr_SetObject(HotError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static void free_ops(op_t *ops, int nops) {
    for (int i = 0; ops && i < nops; i++) {
        PyMem_RawFree(ops[i].stmt);
        PyMem_RawFree(ops[i].stmt2);
    }
    PyMem_RawFree(ops);
}

static void close_all(Conn *c) {
    for (int i = 0; i < c->nstmts; i++) {
        if (c->stmts[i]) mysql_stmt_close(c->stmts[i]);
        PyMem_RawFree(c->texts[i]);
    }
    PyMem_RawFree(c->stmts);
    PyMem_RawFree(c->texts);
    PyMem_RawFree(c->text_lens);
    PyMem_RawFree(c->binds);
    c->stmts = NULL;
    c->texts = NULL;
    c->text_lens = NULL;
    c->binds = NULL;
    c->nstmts = 0;
    if (c->m) {
        mysql_close(c->m);
        c->m = NULL;
    }
}

static PyObject *Conn_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Conn *c = (Conn *)type->tp_alloc(type, 0);
    if (c) pthread_mutex_init(&c->mu, NULL); /* here, not in __init__: take() and dealloc need it either way */
    return (PyObject *)c;
}

/* a busy call holds a reference to the connection, so it is never busy here */
static void Conn_dealloc(Conn *c) {
    close_all(c);
    free_ops(c->ops, c->nops);
    PyMem_RawFree(c->lat);
    PyMem_RawFree(c->svc);
    PyMem_RawFree(c->c_tpl);
    PyMem_RawFree(c->pad_tpl);
    pthread_mutex_destroy(&c->mu);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* TLS modes, as the mysql client's --ssl-mode (load/hotloop.py passes the index) */
enum { TLS_DISABLED, TLS_PREFERRED, TLS_REQUIRED, TLS_VERIFY_CA, TLS_VERIFY_IDENTITY };

/* Conn(host, port, unix_socket, user, password, database, connect_timeout, seed, tls_mode, ca, cert, key) */
static int Conn_init(Conn *c, PyObject *args, PyObject *kw) {
    const char *host, *socket, *user, *password, *db, *ca = NULL, *cert = NULL, *key = NULL;
    unsigned int port, timeout;
    unsigned long long seed;
    int tls = TLS_DISABLED;
    if (!PyArg_ParseTuple(args, "zIzzzzIK|izzz", &host, &port, &socket, &user, &password, &db, &timeout, &seed, &tls,
                          &ca, &cert, &key))
        return -1;
    if (tls < TLS_DISABLED || tls > TLS_VERIFY_IDENTITY) {
        PyErr_SetString(PyExc_ValueError, "no such TLS mode");
        return -1;
    }
    if (c->ready || c->m) {
        PyErr_SetString(PyExc_RuntimeError, "the connection is already open");
        return -1;
    }
    if (!enter(c)) return -1;
    rng_seed(&c->rng, seed);
    c->m = mysql_init(NULL);
    if (!c->m) {
        leave(c);
        PyErr_NoMemory();
        return -1;
    }
    mysql_options(c->m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    /* libmariadb: mysql_ssl_set asks for TLS when the server offers it (PREFERRED) and checks the chain when a CA
       is given; ENFORCE refuses a server without TLS; VERIFY_SERVER_CERT also checks the host name. */
    my_bool enforce = tls >= TLS_REQUIRED, identity = tls == TLS_VERIFY_IDENTITY;
    if (tls != TLS_DISABLED && !socket) mysql_ssl_set(c->m, key, cert, ca, NULL, NULL);
    mysql_options(c->m, MYSQL_OPT_SSL_ENFORCE, &enforce);
    mysql_options(c->m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &identity);
    MYSQL *ok;
    my_bool failed = 1;
    Py_BEGIN_ALLOW_THREADS
    ok = mysql_real_connect(c->m, host, user, password, db, port, socket, 0);
    if (ok) failed = mysql_autocommit(c->m, 1);
    Py_END_ALLOW_THREADS
    leave(c);
    if (failed) {
        raise_mysql(mysql_errno(c->m), mysql_error(c->m));
        mysql_close(c->m);
        c->m = NULL;
        return -1;
    }
    c->ready = 1;
    return 0;
}

static int connected(Conn *c) {
    if (c->m) return 1;
    raise_mysql(2006, "the connection is closed");
    return 0;
}

/* prepare(sql: bytes) -> index. A statement the server will not prepare (ER_UNSUPPORTED_PS: BEGIN and COMMIT
   on MySQL) is kept as text and sent with mysql_real_query, as sysbench's driver does then. */
#define ER_UNSUPPORTED_PS 1295
static PyObject *Conn_prepare(Conn *c, PyObject *args) {
    const char *sql;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#", &sql, &len) || !enter(c)) return NULL;
    MYSQL_STMT *st = NULL;
    int rc = 0;
    if (!connected(c)) goto refused;
    if (c->nstmts == INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many statements");
        goto refused;
    }
    if (!(st = mysql_stmt_init(c->m))) {
        raise_mysql(mysql_errno(c->m), mysql_error(c->m));
        goto refused;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = mysql_stmt_prepare(st, sql, (unsigned long)len);
    Py_END_ALLOW_THREADS
    leave(c);
    char *text = NULL;
    if (rc) {
        if (mysql_stmt_errno(st) != ER_UNSUPPORTED_PS) {
            PyObject *r = raise_mysql(mysql_stmt_errno(st), mysql_stmt_error(st));
            mysql_stmt_close(st);
            return r;
        }
        mysql_stmt_close(st);
        st = NULL;
        text = PyMem_RawMalloc((size_t)len + 1);
        if (!text) return PyErr_NoMemory();
        memcpy(text, sql, (size_t)len);
        text[len] = 0;
    }
    int n = c->nstmts + 1;
    MYSQL_STMT **grown = PyMem_RawRealloc(c->stmts, sizeof(*grown) * n);
    if (grown) c->stmts = grown;
    char **texts = grown ? PyMem_RawRealloc(c->texts, sizeof(*texts) * n) : NULL;
    if (texts) c->texts = texts;
    unsigned long *lens = texts ? PyMem_RawRealloc(c->text_lens, sizeof(*lens) * n) : NULL;
    if (lens) c->text_lens = lens;
    MYSQL_BIND(*binds)[4] = lens ? PyMem_RawRealloc(c->binds, sizeof(*binds) * n) : NULL;
    if (!binds) {
        if (st) mysql_stmt_close(st);
        PyMem_RawFree(text);
        return PyErr_NoMemory();
    }
    c->binds = binds;
    c->stmts[c->nstmts] = st;
    c->texts[c->nstmts] = text;
    c->text_lens[c->nstmts] = (unsigned long)len;
    return PyLong_FromLong(c->nstmts++);
refused:
    leave(c);
    return NULL;
}

static int *int_array(PyObject *seq, int n, int nstmts) {
    PyObject *fast = PySequence_Fast(seq, "a statement list");
    if (!fast) return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "one statement per table");
        return NULL;
    }
    int *out = PyMem_RawMalloc(sizeof(int) * n);
    for (int i = 0; out && i < n; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v < 0 || v >= nstmts) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "no such statement");
            PyMem_RawFree(out);
            out = NULL;
        } else {
            out[i] = (int)v;
        }
    }
    Py_DECREF(fast);
    if (!out && !PyErr_Occurred()) PyErr_NoMemory();
    return out;
}

static char *template_copy(const char *tpl, Py_ssize_t len, size_t *out_len) {
    if (len >= 255) {
        PyErr_SetString(PyExc_ValueError, "template too long");
        return NULL;
    }
    char *out = PyMem_RawMalloc(len + 1);
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, tpl, len);
    out[len] = 0;
    *out_len = (size_t)len;
    return out;
}

static void bind_int(MYSQL_BIND *b, long long *v) {
    memset(b, 0, sizeof(*b));
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
}

static void bind_str(MYSQL_BIND *b, char *s, unsigned long *len) {
    memset(b, 0, sizeof(*b));
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = s;
    b->buffer_length = 255;
    b->length = len;
}

/* what an op binds a statement's parameters to: nothing, (id), (id, id + range), (c, id), (id, k, c, pad) */
enum { B_NONE = 0, B_ID, B_RANGE, B_C_ID, B_ROW };
static const unsigned long B_PARAMS[] = {0, 1, 2, 2, 4};

static int binding_of(int kind, int second) {
    switch (kind) {
    case OP_POINT:
        return B_ID;
    case OP_RANGE:
        return B_RANGE;
    case OP_NON_INDEX:
        return B_C_ID;
    case OP_DELETE_INSERT:
        return second ? B_ROW : B_ID;
    default:
        return B_NONE;
    }
}

/* bind statement `i`'s parameters to the connection's values (libmariadb copies the MYSQL_BINDs) */
static int bind(Conn *c, int i, int binding) {
    MYSQL_BIND *b = c->binds[i];
    values_t *v = &c->v;
    switch (binding) {
    case B_ID:
        bind_int(&b[0], &v->i1);
        break;
    case B_RANGE:
        bind_int(&b[0], &v->i1);
        bind_int(&b[1], &v->i2);
        break;
    case B_C_ID:
        bind_str(&b[0], v->c_buf, &v->c_len);
        bind_int(&b[1], &v->i1);
        break;
    case B_ROW:
        bind_int(&b[0], &v->i1);
        bind_int(&b[1], &v->i2);
        bind_str(&b[2], v->c_buf, &v->c_len);
        bind_str(&b[3], v->pad_buf, &v->pad_len);
        break;
    default:
        return 0;
    }
    if (mysql_stmt_bind_param(c->stmts[i], b)) {
        raise_mysql(mysql_stmt_errno(c->stmts[i]), mysql_stmt_error(c->stmts[i]));
        return -1;
    }
    return 0;
}

/* per statement, the binding `ops` give it (-1: no op runs it), each checked against what the statement takes:
   NULL and ValueError for a text statement given values, a count of values that differs from the statement's
   parameters, or a statement two ops would bind two ways (one of them would run with the other's values) */
static int *bindings(Conn *c, const op_t *ops, int nops, int ntables) {
    int *b = PyMem_RawMalloc(sizeof(int) * (c->nstmts ? c->nstmts : 1));
    if (!b) {
        PyErr_NoMemory();
        return NULL;
    }
    for (int i = 0; i < c->nstmts; i++) b[i] = -1;
    for (int o = 0; o < nops; o++)
        for (int second = 0; second < 2; second++) {
            const int *idx = second ? ops[o].stmt2 : ops[o].stmt;
            int want = binding_of(ops[o].kind, second);
            for (int t = 0; idx && t < ntables; t++) {
                int i = idx[t];
                const char *bad = NULL;
                if (b[i] != -1 && b[i] != want)
                    bad = "a statement is bound two ways by the program's ops";
                else if (!c->stmts[i] && want != B_NONE)
                    bad = "a statement sent as text takes no parameters";
                else if (c->stmts[i] && mysql_stmt_param_count(c->stmts[i]) != B_PARAMS[want])
                    bad = "a statement's parameters do not match its op";
                if (bad) {
                    PyErr_SetString(PyExc_ValueError, bad);
                    PyMem_RawFree(b);
                    return NULL;
                }
                b[i] = want;
            }
        }
    return b;
}

static int apply_bindings(Conn *c, const int *b) {
    for (int i = 0; i < c->nstmts; i++)
        if (b[i] > B_NONE && bind(c, i, b[i])) return -1;
    return 0;
}

/* the program's options, checked: NULL when they are fine, else what is wrong */
static const char *bad_options(int ntables, long long range_extra, const dist_t *d) {
    if (ntables < 1) return "no tables";
    if (range_extra < 0 || range_extra > ID_LIMIT) return "range size out of range";
    if (d->kind < D_UNIFORM || d->kind > D_SPECIAL) return "no such distribution";
    if (d->a < 0 || d->a > ID_LIMIT || d->b < 0 || d->b > ID_LIMIT) return "ids out of range";
    if (d->iters < 1) return "rand_spec_iter must be at least 1";
    if (!isfinite(d->power) || d->power <= 0) return "pareto power must be a positive number";
    if (d->pct < 0 || d->pct > 100 || d->res < 0 || d->res >= 100) return "rand_spec_pct/res out of range";
    return NULL;
}

/* program(ops, ntables, range_extra, (kind, a, b, iters, power, pct, res), c_template, pad_template)
   ops: [(kind, count, counts_as, (stmt per table), (second stmt per table) or None), ...]
   All or nothing: on an error the previous program stays, bound as it was. */
static PyObject *Conn_program(Conn *c, PyObject *args) {
    PyObject *ops;
    int ntables;
    long long range_extra;
    dist_t d;
    const char *ctpl, *padtpl;
    Py_ssize_t clen, padlen;
    if (!PyArg_ParseTuple(args, "OiL(iLLidLL)y#y#", &ops, &ntables, &range_extra, &d.kind, &d.a, &d.b, &d.iters,
                          &d.power, &d.pct, &d.res, &ctpl, &clen, &padtpl, &padlen) ||
        !idle(c))
        return NULL;
    const char *bad = bad_options(ntables, range_extra, &d);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        return NULL;
    }
    size_t c_len = 0, pad_len = 0;
    char *c_tpl = template_copy(ctpl, clen, &c_len);
    char *pad_tpl = c_tpl ? template_copy(padtpl, padlen, &pad_len) : NULL;
    PyObject *fast = pad_tpl ? PySequence_Fast(ops, "ops") : NULL;
    op_t *new_ops = NULL;
    int *b = NULL;
    Py_ssize_t n = 0;
    if (!fast) goto fail;
    n = PySequence_Fast_GET_SIZE(fast);
    if (n > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many ops");
        goto fail;
    }
    if (!(new_ops = PyMem_RawCalloc(n ? n : 1, sizeof(op_t)))) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        op_t *op = &new_ops[i];
        PyObject *stmts, *stmts2;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "iiiOO", &op->kind, &op->count, &op->counts_as,
                              &stmts, &stmts2))
            goto fail;
        if (op->kind < 0 || op->kind >= NKINDS || op->counts_as < 0 || op->counts_as >= NCOUNTS || op->count < 0) {
            PyErr_SetString(PyExc_ValueError, "no such op kind or statement class, or a negative count");
            goto fail;
        }
        if ((op->kind == OP_DELETE_INSERT) != (stmts2 != Py_None)) {
            PyErr_SetString(PyExc_ValueError, "delete_inserts, and only they, need second statements");
            goto fail;
        }
        if (!(op->stmt = int_array(stmts, ntables, c->nstmts))) goto fail;
        if (stmts2 != Py_None && !(op->stmt2 = int_array(stmts2, ntables, c->nstmts))) goto fail;
    }
    if (!(b = bindings(c, new_ops, (int)n, ntables))) goto fail;
    if (apply_bindings(c, b)) {
        /* put the previous program's bindings back (they were applied once: they apply again) */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        int *old = c->ops ? bindings(c, c->ops, c->nops, c->ntables) : NULL;
        if (old) apply_bindings(c, old);
        PyMem_RawFree(old);
        PyErr_Restore(type, value, tb);
        goto fail;
    }
    PyMem_RawFree(b);
    Py_DECREF(fast);
    free_ops(c->ops, c->nops);
    c->ops = new_ops;
    c->nops = (int)n;
    c->ntables = ntables;
    c->range_extra = range_extra;
    c->ids = d;
    PyMem_RawFree(c->c_tpl);
    PyMem_RawFree(c->pad_tpl);
    c->c_tpl = c_tpl;
    c->pad_tpl = pad_tpl;
    c->c_len = c_len;
    c->pad_len = pad_len;
    c->v.c_len = (unsigned long)c_len;
    c->v.pad_len = (unsigned long)pad_len;
    Py_RETURN_NONE;
fail:
    PyMem_RawFree(b);
    Py_XDECREF(fast);
    free_ops(new_ops, (int)n);
    PyMem_RawFree(c_tpl);
    PyMem_RawFree(pad_tpl);
    return NULL;
}

/* sysbench.rand.string(): '#' a random digit, '@' a random lowercase letter */
static void fill(rng_t *r, const char *tpl, size_t len, char *out) {
    for (size_t i = 0; i < len; i++) {
        char t = tpl[i];
        out[i] = t == '#' ? (char)('0' + rng_below(r, 10)) : t == '@' ? (char)('a' + rng_below(r, 26)) : t;
    }
}

/* a text statement failed: the error is the connection's */
#define TEXT_FAILED ((MYSQL_STMT *)1)

/* one statement: execute, read and drop the rows; NULL or the failing statement (TEXT_FAILED) */
static MYSQL_STMT *exec(Conn *c, int i) {
    MYSQL_STMT *st = c->stmts[i];
    if (!st) {
        if (mysql_real_query(c->m, c->texts[i], c->text_lens[i])) return TEXT_FAILED;
        MYSQL_RES *res = mysql_store_result(c->m);
        if (res) mysql_free_result(res);
        return NULL;
    }
    if (mysql_stmt_execute(st)) return st;
    if (mysql_stmt_field_count(st) > 0) {
        if (mysql_stmt_store_result(st)) return st;
        mysql_stmt_free_result(st);
    }
    return NULL;
}

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* one event; the statements done are added to counts[C_READ..C_OTHER]; the failing statement or NULL */
static MYSQL_STMT *event(Conn *c, unsigned long long counts[NCOUNTS]) {
    values_t *v = &c->v;
    for (int o = 0; o < c->nops; o++) {
        op_t *op = &c->ops[o];
        int t = c->ntables == 1 ? 0 : (int)rng_below(&c->rng, (uint64_t)c->ntables);
        int st = op->stmt[t];
        MYSQL_STMT *bad;
        switch (op->kind) {
        case OP_OTHER:
            if ((bad = exec(c, st))) return bad;
            counts[op->counts_as]++;
            break;
        case OP_POINT:
            for (int k = 0; k < op->count; k++) {
                v->i1 = draw(&c->ids, &c->rng);
                if ((bad = exec(c, st))) return bad;
                counts[op->counts_as]++;
            }
            break;
        case OP_RANGE:
            for (int k = 0; k < op->count; k++) {
                v->i1 = draw(&c->ids, &c->rng);
                v->i2 = v->i1 + c->range_extra;
                if ((bad = exec(c, st))) return bad;
                counts[op->counts_as]++;
            }
            break;
        case OP_NON_INDEX:
            for (int k = 0; k < op->count; k++) {
                fill(&c->rng, c->c_tpl, c->c_len, v->c_buf);
                v->i1 = draw(&c->ids, &c->rng);
                if ((bad = exec(c, st))) return bad;
                counts[op->counts_as]++;
            }
            break;
        case OP_DELETE_INSERT: {
            int ins = op->stmt2[t];
            for (int k = 0; k < op->count; k++) {
                v->i1 = draw(&c->ids, &c->rng);
                v->i2 = draw(&c->ids, &c->rng);
                if ((bad = exec(c, st))) return bad;
                counts[C_WRITE]++;
                fill(&c->rng, c->c_tpl, c->c_len, v->c_buf);
                fill(&c->rng, c->pad_tpl, c->pad_len, v->pad_buf);
                if ((bad = exec(c, ins))) return bad;
                counts[C_WRITE]++;
            }
            break;
        }
        }
    }
    return NULL;
}

/* room for one more in a latency buffer (under mu) */
static int room(int64_t **buf, size_t n, size_t *cap) {
    if (n < *cap) return 1;
    size_t grown_cap = *cap ? 2 * *cap : 4096;
    int64_t *grown = PyMem_RawRealloc(*buf, grown_cap * sizeof(int64_t));
    if (!grown) return 0;
    *buf = grown;
    *cap = grown_cap;
    return 1;
}

/* an event's figures to the reporter: `svc` < 0 in closed loop (the latency is the service time); `late`: over
   the open loop's latency limit; `skipped`: due times skipped for it before this event */
static int publish(Conn *c, int64_t lat, int64_t svc, int late, unsigned long long skipped, int ended,
                   unsigned long long counts[NCOUNTS]) {
    int ok = 1;
    pthread_mutex_lock(&c->mu);
    c->skipped += skipped;
    if (ended) {
        ok = room(&c->lat, c->nlat, &c->caplat) && (svc < 0 || room(&c->svc, c->nsvc, &c->capsvc));
        if (ok) {
            c->lat[c->nlat++] = lat;
            if (svc >= 0) c->svc[c->nsvc++] = svc;
            c->events++;
            c->late += late;
        }
    }
    c->reads += counts[C_READ];
    c->writes += counts[C_WRITE];
    c->other += counts[C_OTHER];
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* run(seconds[, queue]) -> None: events until `seconds` have passed or stop(); with a DueQueue, open loop: each
   event starts at the next due time the connection claims (sleeping until then), its latency counts from that
   time and its service time from its start. Raises HotError on a server error (the
   statements done before it counted, the event not). stop() is one-shot: it ends the run() in progress, or the
   next one at once if none is, and is then consumed. */
/* open loop: sleep until `due` (or stop()), in slices of at most 50 ms; 0 when stopped first */
static int wait_due(Conn *c, int64_t due) {
    for (;;) {
        if (__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) return 0;
        int64_t left = due - now_ns();
        if (left <= 0) return 1;
        if (left > 50000000) left = 50000000;
        struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
        nanosleep(&ts, NULL);
    }
}

static PyObject *Conn_run(Conn *c, PyObject *args) {
    double seconds;
    PyObject *queue = Py_None;
    if (!PyArg_ParseTuple(args, "d|O", &seconds, &queue)) return NULL;
    if (queue != Py_None && !PyObject_TypeCheck(queue, &DueQueueType)) {
        PyErr_SetString(PyExc_TypeError, "run(seconds, queue): queue must be a DueQueue or None");
        return NULL;
    }
    DueQueue *q = queue == Py_None ? NULL : (DueQueue *)queue;
    if (!isfinite(seconds) || seconds < 0 || seconds > 1e6) {
        PyErr_SetString(PyExc_ValueError, "run(seconds): seconds from 0 to 1e6");
        return NULL;
    }
    if (!enter(c)) return NULL;
    if (!connected(c)) goto refused;
    if (!c->ops || c->nops == 0) {
        PyErr_SetString(PyExc_ValueError, "no program");
        goto refused;
    }
    /* an interrupt that came while no run() was in progress: this call is the one it stops */
    if (__atomic_exchange_n(&c->stop, 0, __ATOMIC_ACQ_REL)) {
        leave(c);
        Py_RETURN_NONE;
    }
    MYSQL_STMT *bad = NULL;
    int oom = 0;
    Py_INCREF(queue); /* the queue outlives the run even if Python drops it meanwhile */
    Py_BEGIN_ALLOW_THREADS
    int64_t deadline = now_ns() + (int64_t)(seconds * 1e9);
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        unsigned long long counts[NCOUNTS] = {0, 0, 0};
        int64_t due = 0;
        unsigned long long skipped = 0;
        if (q) {
            if (!due_claim(q, now_ns(), &due, &skipped)) { /* nothing pushed yet: Python draws ahead */
                publish(c, 0, 0, 0, skipped, 0, counts);
                struct timespec ms = {0, 1000000};
                nanosleep(&ms, NULL);
                if (now_ns() >= deadline) break;
                continue;
            }
            if (!wait_due(c, due)) {
                publish(c, 0, 0, 0, skipped, 0, counts);
                break; /* stopped before its time: not run */
            }
        }
        int64_t t0 = now_ns();
        bad = event(c, counts);
        int64_t t1 = now_ns();
        int64_t lat = q ? t1 - due : t1 - t0;
        if (!publish(c, lat, q ? t1 - t0 : -1, q && q->limit_ns && lat > q->limit_ns, skipped, bad == NULL, counts)) {
            oom = 1;
            break;
        }
        if (bad || t1 >= deadline) break;
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(queue);
    __atomic_store_n(&c->stop, 0, __ATOMIC_RELEASE); /* consumed: one interrupt stops one run() */
    PyObject *result = NULL;
    if (oom)
        PyErr_NoMemory();
    else if (bad == TEXT_FAILED)
        raise_mysql(mysql_errno(c->m), mysql_error(c->m));
    else if (bad)
        raise_mysql(mysql_stmt_errno(bad), mysql_stmt_error(bad));
    else
        result = Py_NewRef(Py_None);
    leave(c);
    return result;
refused:
    leave(c);
    return NULL;
}

/* take() -> (events, reads, writes, other, latencies: bytes of int64 ns since the last take); may come while
   run() is in progress (the reporter's thread): what it reads is under mu */
static PyObject *Conn_take(Conn *c, PyObject *noargs) {
    pthread_mutex_lock(&c->mu);
    int64_t *lat = c->lat, *svc = c->svc;
    size_t n = c->nlat, nsvc = c->nsvc;
    unsigned long long e = c->events, r = c->reads, w = c->writes, o = c->other, late = c->late, sk = c->skipped;
    c->lat = c->svc = NULL;
    c->nlat = c->caplat = c->nsvc = c->capsvc = 0;
    pthread_mutex_unlock(&c->mu);
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)lat, (Py_ssize_t)(n * sizeof(int64_t)));
    PyObject *svc_bytes = PyBytes_FromStringAndSize((const char *)svc, (Py_ssize_t)(nsvc * sizeof(int64_t)));
    PyMem_RawFree(lat);
    PyMem_RawFree(svc);
    if (!bytes || !svc_bytes) {
        Py_XDECREF(bytes);
        Py_XDECREF(svc_bytes);
        return NULL;
    }
    return Py_BuildValue("(KKKKNNKK)", e, r, w, o, bytes, svc_bytes, late, sk);
}

/* query(sql: bytes) -> None: a plain statement (ROLLBACK after a deadlock), its rows read and dropped */
static PyObject *Conn_query(Conn *c, PyObject *args) {
    const char *sql;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#", &sql, &len) || !enter(c)) return NULL;
    if (!connected(c)) {
        leave(c);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = mysql_real_query(c->m, sql, (unsigned long)len);
    if (!rc) {
        MYSQL_RES *res = mysql_store_result(c->m);
        if (res) mysql_free_result(res);
    }
    Py_END_ALLOW_THREADS
    PyObject *result = rc ? raise_mysql(mysql_errno(c->m), mysql_error(c->m)) : Py_NewRef(Py_None);
    leave(c);
    return result;
}

/* may come from any thread, run() in progress or not */
static PyObject *Conn_stop(Conn *c, PyObject *noargs) {
    __atomic_store_n(&c->stop, 1, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyObject *Conn_close(Conn *c, PyObject *noargs) {
    if (!idle(c)) return NULL;
    close_all(c);
    Py_RETURN_NONE;
}

/* draw(n) -> list: n ids of the program's distribution (tests compare it with load/randgen.py) */
static PyObject *Conn_draw(Conn *c, PyObject *args) {
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n) || !idle(c)) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "draw(n): n must not be negative");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *id = PyLong_FromLongLong(draw(&c->ids, &c->rng));
        if (!id) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, id);
    }
    return out;
}

static PyMethodDef Conn_methods[] = {
    {"prepare", (PyCFunction)Conn_prepare, METH_VARARGS, "prepare(sql) -> statement index"},
    {"program", (PyCFunction)Conn_program, METH_VARARGS, "the event program"},
    {"run", (PyCFunction)Conn_run, METH_VARARGS, "run(seconds[, queue]): events, the GIL released"},
    {"take", (PyCFunction)Conn_take, METH_NOARGS,
     "cumulative counters, the latencies and service times since the last take, cumulative late and skipped"},
    {"query", (PyCFunction)Conn_query, METH_VARARGS, "a plain statement"},
    {"stop", (PyCFunction)Conn_stop, METH_NOARGS, "run() returns after the event in flight"},
    {"close", (PyCFunction)Conn_close, METH_NOARGS, "close the statements and the connection"},
    {"draw", (PyCFunction)Conn_draw, METH_VARARGS, "ids of the program's distribution"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ConnType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tunebench.load._hotloop.Conn",
    .tp_basicsize = sizeof(Conn),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One client connection running an OLTP event program in C.",
    .tp_new = Conn_new,
    .tp_init = (initproc)Conn_init,
    .tp_dealloc = (destructor)Conn_dealloc,
    .tp_methods = Conn_methods,
};

static PyObject *client_version(PyObject *self, PyObject *noargs) {
    return PyUnicode_FromString(mysql_get_client_info());
}

static PyMethodDef module_methods[] = {
    {"client_version", client_version, METH_NOARGS, "the client library's version"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_hotloop", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__hotloop(void) {
    /* mysql_library_init is not thread-safe: once, at import (load/hotloop.py imports this on the worker's main
       thread before any connection thread starts) */
    if (mysql_library_init(0, NULL, NULL)) {
        PyErr_SetString(PyExc_ImportError, "the MariaDB client library did not initialise");
        return NULL;
    }
    if (PyType_Ready(&ConnType) < 0 || PyType_Ready(&DueQueueType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    HotError = PyErr_NewException("tunebench.load._hotloop.HotError", NULL, NULL);
    Py_INCREF(&ConnType);
    PyModule_AddObject(m, "Conn", (PyObject *)&ConnType);
    Py_INCREF(&DueQueueType);
    PyModule_AddObject(m, "DueQueue", (PyObject *)&DueQueueType);
    PyModule_AddObject(m, "HotError", HotError);
    return m;
}
