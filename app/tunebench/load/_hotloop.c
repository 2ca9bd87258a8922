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

/* ---- the statement-program VM: a family's transactions as a program (load/program.py assembles it) ----------
 * Registers hold NULL, integers, doubles or byte strings; an operand "ref" is a register (>= 0) or a constant
 * (-1 - index). Statements are formats: text pieces with values between them (SQL literals, or printf-like
 * %d/%f/%s renderings), sent as plain text queries (mysql_real_query) with their whole result stored, so a
 * later instruction can read any row back. Every index an instruction holds is checked when the program is
 * set; the ones computed at run time (a row, a register or constant picked by a value) are checked when used. */
enum { V_NULL = 0, V_INT, V_DBL, V_STR };
typedef struct {
    int kind;
    int64_t i;
    double d;
    char *s; /* V_STR: len bytes and a NUL; the buffer is kept (cap) when the register changes kind */
    size_t len, cap;
    PyObject *owner; /* a large constant: s points into this bytes object (shared by the connections), not copied */
} val_t;

enum { F_SQL = 0, F_INT, F_FLT, F_STR };
typedef struct {
    int ref, kind, width, prec;
} farg_t;

typedef struct {
    char **pieces;
    size_t *plens;
    farg_t *args;
    int nargs; /* pieces: nargs + 1 */
} fmt_t;

typedef struct {
    int op, a, b, c, d, e, f;
} ins_t;

typedef struct vm {
    val_t *consts;
    int nconsts;
    fmt_t *fmts;
    int nfmts;
    ins_t *code;
    int ncode;
    int nregs, ntypes, init_pc, event_pc, max_retries;
} vm_t;

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

/* The server error codes of a connection's errors, each with its cumulative count (issue 44 item 4): the first
   NCODES - 1 codes met keep a slot each; later ones count in the last slot (code 0: "other codes") */
#define NCODES 8

/* what one event (or the init code) did, published with it: its retries' error codes too */
typedef struct {
    unsigned long long counts[NCOUNTS];
    unsigned long long retries, rollbacks, errmarks;
    unsigned int codes[NCODES];
    unsigned int ncodes[NCODES];
} ev_t;

/* The state as of a whole second of the worker's clock (issue 41): kept when the first event ends after that edge
   (before the event is added), so a reporter that wakes late -- a busy machine -- still counts each second's events
   and latencies only. It stands for every edge from `first` to `last` (an event that spans several seconds). */
#define NCUTS 16
#define SECOND_NS 1000000000LL
typedef struct {
    int64_t first, last;
    size_t nlat, nsvc;
    unsigned long long e, r, w, o, late, sk, errors;
    unsigned long long ecount[NCODES]; /* per code of the connection's ecode[] */
    int ntypes;
    unsigned long long *typed; /* ntypes * 4, or NULL */
} cut_t;

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
    /* the statement-program VM (a family's transactions, load/program.py); NULL: the OLTP ops above */
    struct vm *vm;
    val_t *regs;
    int vm_inited;         /* its init code ran on this connection */
    MYSQL_RES *res;        /* the last statement's rows, kept for the instructions that read them */
    int64_t nrows;
    buf_t sqlb, tmpb;      /* a statement's text; a format's */
    buf_t sendb;           /* the text of a statement sent and not read yet (I_SEND) */
    int inflight;          /* I_SEND sent a statement whose result I_RECV has not read yet */
    int inflight_class;    /* and its statement class */
    unsigned long long errors;  /* deadlocks and lock waits the program retried, and its error marks (under mu) */
    unsigned int ecode[NCODES];            /* the codes of those retries (0: none yet; the last slot: others) */
    unsigned long long ecount[NCODES];     /* and their cumulative counts (under mu) */
    unsigned long long *typed;  /* per type: events, errors, rollbacks, retries (under mu) */
    int current;           /* the type under way (__atomic: current() reads it from another thread) */
    int finished;          /* I_FINISH ran: no more events on this connection (__atomic) */
    int64_t idle_until;    /* a paced program's next start (I_PACE) */
    unsigned int err_no;   /* the failing event's server error (0: a program error), and its message */
    char err_msg[512];
    /* the second edges (under mu): the next edge not crossed yet (0: grid() not called), the cuts not taken yet */
    int64_t cut_next;
    cut_t cuts[NCUTS];
    int ncuts;
} Conn;

static PyObject *HotError;

/* ---- open loop: the due times (intended starts) a group's connections in this process serve ----------------- */

/* Python draws the arrival times (core/schedule.py) and push()es them ahead of the clock; the connections claim
   them in order under mu, each one at most once; a claim skips (and counts) those already later than the
   latency limit, as pgbench's --latency-limit does. backlog() and drop() are the reporter's. */
#define NEDGES 16
typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    int64_t *due; /* due[head..tail): pushed, not claimed; ascending */
    size_t head, tail, cap;
    int64_t limit_ns; /* 0: none */
    /* the backlog as of each second's edge of grid(): kept at the first claim after the edge, before it, so that a
       reporter waking late reads what was due and not started at the edge, not after a catch-up (under mu) */
    int64_t edge_next; /* 0: grid() not called */
    int64_t edges[NEDGES];
    size_t eback[NEDGES];
    int64_t elag[NEDGES];
    int nedges;
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
    /* out of room: the claimed ones make room when there are at least as many of them as pending ones (each
       pending one is moved at most once per as many claimed: amortised O(1), not the whole backlog on every
       push); otherwise the buffer doubles. The feeder keeps the pending ones within BACKLOG_LIMIT (worker.py
       push_due), so the mutex is never held over more than that. */
    if (q->tail + n > q->cap && q->head && q->head >= q->tail - q->head) {
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

/* the backlog at every edge up to `now` not kept yet, before a claim changes it (under mu) */
static void keep_edges(DueQueue *q, int64_t now) {
    if (!q->edge_next || now < q->edge_next) return;
    int64_t edge = q->edge_next;
    if ((now - edge) / SECOND_NS >= NEDGES) edge += ((now - edge) / SECOND_NS - NEDGES + 1) * SECOND_NS;
    for (; edge <= now; edge += SECOND_NS) {
        if (q->nedges == NEDGES) { /* the oldest goes */
            memmove(q->edges, q->edges + 1, (NEDGES - 1) * sizeof q->edges[0]);
            memmove(q->eback, q->eback + 1, (NEDGES - 1) * sizeof q->eback[0]);
            memmove(q->elag, q->elag + 1, (NEDGES - 1) * sizeof q->elag[0]);
            q->nedges--;
        }
        size_t n = due_by(q, edge);
        q->edges[q->nedges] = edge;
        q->eback[q->nedges] = n;
        q->elag[q->nedges] = n ? edge - q->due[q->head] : 0;
        q->nedges++;
    }
    q->edge_next = edge;
}

/* grid(grid0_ns): the reporter's seconds end at grid0_ns + k s; the backlog is kept as of each edge from now on */
static PyObject *DueQueue_grid(DueQueue *q, PyObject *args) {
    long long grid0;
    if (!PyArg_ParseTuple(args, "L", &grid0)) return NULL;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * SECOND_NS + ts.tv_nsec;
    pthread_mutex_lock(&q->mu);
    int64_t k = now > grid0 ? (now - grid0) / SECOND_NS + 1 : 1;
    q->edge_next = grid0 + k * SECOND_NS;
    q->nedges = 0;
    pthread_mutex_unlock(&q->mu);
    Py_RETURN_NONE;
}

/* backlog(now_ns[, edge_ns]) -> (due and not started, how late the oldest of them is, ns; 0 without a backlog);
   with `edge_ns` (an edge of grid(), now or before): as of that edge -- kept at the first claim after it, or, with
   no claim since, the state now is the state then */
static PyObject *DueQueue_backlog(DueQueue *q, PyObject *args) {
    long long now, edge = -1;
    if (!PyArg_ParseTuple(args, "L|L", &now, &edge)) return NULL;
    pthread_mutex_lock(&q->mu);
    size_t n;
    long long lag;
    if (edge < 0) {
        n = due_by(q, now);
        lag = n ? now - q->due[q->head] : 0;
    } else {
        int i = 0, found = -1;
        for (; i < q->nedges && q->edges[i] <= edge; i++)
            if (q->edges[i] == edge) found = i;
        if (found >= 0) {
            n = q->eback[found];
            lag = q->elag[found];
        } else {
            n = due_by(q, edge);
            lag = n ? edge - q->due[q->head] : 0;
        }
        /* those up to `edge` are taken */
        memmove(q->edges, q->edges + i, (size_t)(q->nedges - i) * sizeof q->edges[0]);
        memmove(q->eback, q->eback + i, (size_t)(q->nedges - i) * sizeof q->eback[0]);
        memmove(q->elag, q->elag + i, (size_t)(q->nedges - i) * sizeof q->elag[0]);
        q->nedges -= i;
    }
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
    keep_edges(q, now);
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
    {"backlog", (PyCFunction)DueQueue_backlog, METH_VARARGS,
     "backlog(now[, edge]) -> (due and not started, lag ns), as of a grid edge when given"},
    {"grid", (PyCFunction)DueQueue_grid, METH_VARARGS, "grid(grid0_ns): keep the backlog as of each second's edge"},
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

static void vm_free(struct vm *vm);
static void regs_free(val_t *regs, int n);

static void close_all(Conn *c) {
    c->inflight = 0; /* a statement sent is gone with its connection */
    if (c->res) {
        mysql_free_result(c->res);
        c->res = NULL;
    }
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
/* under mu (or with no other user) */
static void cuts_drop(Conn *c, int n) {
    for (int i = 0; i < n; i++) PyMem_RawFree(c->cuts[i].typed);
    memmove(&c->cuts[0], &c->cuts[n], sizeof(cut_t) * (size_t)(c->ncuts - n));
    c->ncuts -= n;
}

static void cuts_clear(Conn *c) { cuts_drop(c, c->ncuts); }

/* an event (or a failed one's statements) is about to be published at `now`: the state before it is the state as
   of every edge crossed since the last event (under mu) */
static void cut_record(Conn *c, int64_t now) {
    if (!c->cut_next || now < c->cut_next) return;
    int64_t last = c->cut_next + (now - c->cut_next) / SECOND_NS * SECOND_NS;
    if (c->ncuts == NCUTS) cuts_drop(c, 1); /* the reporter is seconds late: those events count in a later take */
    int ntypes = c->vm && c->typed ? c->vm->ntypes : 0;
    cut_t *k = &c->cuts[c->ncuts];
    k->typed = NULL;
    if (ntypes) {
        k->typed = PyMem_RawMalloc(sizeof(unsigned long long) * 4 * (size_t)ntypes);
        if (!k->typed) { /* no memory: these seconds' events count in the take that comes (as before the grid) */
            c->cut_next = last + SECOND_NS;
            return;
        }
        memcpy(k->typed, c->typed, sizeof(unsigned long long) * 4 * (size_t)ntypes);
    }
    k->first = c->cut_next;
    k->last = last;
    k->nlat = c->nlat;
    k->nsvc = c->nsvc;
    k->e = c->events;
    k->r = c->reads;
    k->w = c->writes;
    k->o = c->other;
    k->late = c->late;
    k->sk = c->skipped;
    k->errors = c->errors;
    memcpy(k->ecount, c->ecount, sizeof k->ecount);
    k->ntypes = ntypes;
    c->ncuts++;
    c->cut_next = last + SECOND_NS;
}

static void Conn_dealloc(Conn *c) {
    close_all(c);
    free_ops(c->ops, c->nops);
    if (c->vm) regs_free(c->regs, c->vm->nregs);
    vm_free(c->vm);
    PyMem_RawFree(c->typed);
    cuts_clear(c);
    PyMem_RawFree(c->sqlb.p);
    PyMem_RawFree(c->sendb.p);
    PyMem_RawFree(c->tmpb.p);
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
       is given; ENFORCE refuses a server without TLS; VERIFY_SERVER_CERT also checks the host name. ENFORCE is
       only ever set, never cleared: libmariadb keeps it in the same flag mysql_ssl_set raised (`use_ssl`), so an
       ENFORCE of 0 after it turned TLS off, and PREFERRED connections were plain (issue 43 item 2). */
    my_bool enforce = 1, identity = 1;
    if (tls != TLS_DISABLED && !socket) {
        mysql_ssl_set(c->m, key, cert, ca, NULL, NULL);
        if (tls >= TLS_REQUIRED) mysql_options(c->m, MYSQL_OPT_SSL_ENFORCE, &enforce);
        if (tls == TLS_VERIFY_IDENTITY) mysql_options(c->m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &identity);
    }
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

/* ---- the statement-program VM: setting a program, running it ------------------------------------------------ */

enum {
    I_END = 0, I_MOV, I_UNIF, I_NURAND, I_ADD, I_SUB, I_MUL, I_DIV, I_IDIV, I_MOD, I_BOR, I_MIN, I_MAX,
    I_EQ, I_NE, I_LT, I_LE, I_GT, I_GE, I_NOT, I_TRUNC, I_ROUND, I_JMP, I_JZ, I_JNZ, I_EXEC, I_ROW, I_FMT,
    I_APPEND, I_SUBSTR, I_PICK, I_MOVI, I_TYPE, I_ROLLMARK, I_ERRMARK, I_RETRY, I_TIME, I_RSTR, I_PACE,
    I_COALESCE, I_NROWS, I_FINISH, I_SEND, I_RECV, N_INS
};
/* each instruction's operands a..f: R a register, r a register or -1, X a ref, L an instruction, F a format,
   K a constant, N a count >= 0, C a statement class (0..3: read, write, other, not counted), T a type */
static const char *const I_SHAPE[N_INS] = {
    "", "RX", "RXX", "RXXXX", "RXX", "RXX", "RXX", "RXX", "RXX", "RXX", "RXX", "RXX", "RXX",
    "RXX", "RXX", "RXX", "RXX", "RXX", "RXX", "RX", "RX", "RXX", "L", "XL", "XL", "FCrrN", "RNX", "RF",
    "RF", "RXX", "RKNX", "RRNX", "T", "", "", "", "R", "RKX", "XX",
    "RXX", "R", "", "FC", "",
};
#define VM_STEPS 50000000L
#define C_NONE 3
enum { VM_OK = 0, VM_SERVER, VM_BUG, VM_OOM };

static void val_free(val_t *v) { /* with the GIL (an owner's reference) */
    if (v->owner) {
        Py_CLEAR(v->owner);
        v->s = NULL;
        v->len = v->cap = 0;
        return;
    }
    PyMem_RawFree(v->s);
    v->s = NULL;
    v->len = v->cap = 0;
}

static void vm_free(struct vm *vm) {
    if (!vm) return;
    for (int i = 0; vm->consts && i < vm->nconsts; i++) val_free(&vm->consts[i]);
    PyMem_RawFree(vm->consts);
    for (int i = 0; vm->fmts && i < vm->nfmts; i++) {
        fmt_t *f = &vm->fmts[i];
        for (int k = 0; f->pieces && k <= f->nargs; k++) PyMem_RawFree(f->pieces[k]);
        PyMem_RawFree(f->pieces);
        PyMem_RawFree(f->plens);
        PyMem_RawFree(f->args);
    }
    PyMem_RawFree(vm->fmts);
    PyMem_RawFree(vm->code);
    PyMem_RawFree(vm);
}

static void regs_free(val_t *regs, int n) {
    for (int i = 0; regs && i < n; i++) val_free(&regs[i]);
    PyMem_RawFree(regs);
}

static int val_set_str(val_t *v, const char *s, size_t len) {
    if (len + 1 > v->cap) {
        size_t cap = len + 1 < 32 ? 32 : len + 1;
        char *grown = PyMem_RawRealloc(v->s, cap);
        if (!grown) return -1;
        v->s = grown;
        v->cap = cap;
    }
    if (len) memmove(v->s, s, len);
    v->s[len] = 0;
    v->len = len;
    v->kind = V_STR;
    return 0;
}

static inline void val_set_int(val_t *v, int64_t i) {
    v->kind = V_INT;
    v->i = i;
}

static inline void val_set_dbl(val_t *v, double d) {
    v->kind = V_DBL;
    v->d = d;
}

static int val_copy(val_t *dst, const val_t *src) {
    if (dst == src) return 0;
    if (src->kind == V_STR) return val_set_str(dst, src->s, src->len);
    dst->kind = src->kind;
    dst->i = src->i;
    dst->d = src->d;
    return 0;
}

static inline int64_t as_int(const val_t *v) {
    switch (v->kind) {
    case V_INT:
        return v->i;
    case V_DBL:
        return isfinite(v->d) && fabs(v->d) < 9.2e18 ? (int64_t)v->d : 0;
    case V_STR:
        return strtoll(v->s, NULL, 10);
    default:
        return 0;
    }
}

static inline double as_dbl(const val_t *v) {
    switch (v->kind) {
    case V_INT:
        return (double)v->i;
    case V_DBL:
        return v->d;
    case V_STR:
        return strtod(v->s, NULL);
    default:
        return 0.0;
    }
}

/* a value that takes double arithmetic: a double, or a string with a fraction or an exponent (a DECIMAL column) */
static inline int is_dbl(const val_t *v) {
    if (v->kind == V_DBL) return 1;
    if (v->kind != V_STR) return 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->s[i] == '.' || v->s[i] == 'e' || v->s[i] == 'E') return 1;
    return 0;
}

static int buf_room(buf_t *b, size_t more) {
    if (b->len + more + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + more + 1) cap *= 2;
    char *grown = PyMem_RawRealloc(b->p, cap);
    if (!grown) return -1;
    b->p = grown;
    b->cap = cap;
    return 0;
}

static int buf_put(buf_t *b, const char *s, size_t n) {
    if (buf_room(b, n)) return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

static int buf_pad(buf_t *b, size_t n) {
    if (buf_room(b, n)) return -1;
    memset(b->p + b->len, ' ', n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

/* s padded to |width| as printf's %*s (negative: left-justified) */
static int buf_str(buf_t *b, const char *s, size_t n, int width) {
    size_t w = (size_t)(width < 0 ? -(long)width : width);
    if (width > 0 && w > n && buf_pad(b, w - n)) return -1;
    if (buf_put(b, s, n)) return -1;
    if (width < 0 && w > n && buf_pad(b, w - n)) return -1;
    return 0;
}

static int buf_printf(buf_t *b, const char *fmt, int width, int prec, double d, long long i, int is_float) {
    char tmp[400];
    int n = is_float ? snprintf(tmp, sizeof tmp, fmt, width, prec, d) : snprintf(tmp, sizeof tmp, fmt, width, i);
    if (n < 0) return -1;
    if ((size_t)n < sizeof tmp) return buf_put(b, tmp, (size_t)n);
    /* wider than the stack buffer (a width up to 4,000, a double over 10^390): printed whole, never cut (it was
       cut at 399 characters without a word, issue 43 item 20) */
    char *big = malloc((size_t)n + 1);
    if (!big) return -1;
    int m = is_float ? snprintf(big, (size_t)n + 1, fmt, width, prec, d) : snprintf(big, (size_t)n + 1, fmt, width, i);
    int rc = m == n ? buf_put(b, big, (size_t)n) : -1;
    free(big);
    return rc;
}

#define REF(c, r) ((r) >= 0 ? &(c)->regs[(r)] : &(c)->vm->consts[-(r)-1])

/* one value as its format argument says: an SQL literal (NULL, a number, a quoted string with ' and \ escaped,
   as load/tpcc/trx.py literal()), %*d (a double truncated toward zero), %*.*f, or %*s (the text as it is) */
static int render_arg(Conn *c, buf_t *b, const farg_t *a) {
    const val_t *v = REF(c, a->ref);
    switch (a->kind) {
    case F_SQL:
        if (v->kind == V_NULL) return buf_put(b, "NULL", 4);
        if (v->kind == V_INT) return buf_printf(b, "%*lld", 0, 0, 0, (long long)v->i, 0);
        if (v->kind == V_DBL) return buf_printf(b, "%*.*f", 0, a->prec, v->d, 0, 1);
        if (buf_put(b, "'", 1)) return -1;
        for (size_t i = 0; i < v->len; i++) {
            char ch = v->s[i];
            if ((ch == '\'' && buf_put(b, "''", 2)) || (ch == '\\' && buf_put(b, "\\\\", 2)) ||
                (ch != '\'' && ch != '\\' && buf_put(b, &ch, 1)))
                return -1;
        }
        return buf_put(b, "'", 1);
    case F_INT: /* prec 1: zero-padded, printf's %0Nd */
        return buf_printf(b, a->prec == 1 ? "%0*lld" : "%*lld", a->width, 0, 0, (long long)as_int(v), 0);
    case F_FLT:
        return buf_printf(b, "%*.*f", a->width, a->prec, as_dbl(v), 0, 1);
    default:
        if (v->kind == V_STR) return buf_str(b, v->s, v->len, a->width);
        if (v->kind == V_NULL) return buf_str(b, "", 0, a->width);
        if (v->kind == V_INT) return buf_printf(b, "%*lld", a->width, 0, 0, (long long)v->i, 0);
        return buf_printf(b, "%*.*f", a->width, 6, v->d, 0, 1);
    }
}

static int render(Conn *c, const fmt_t *f, buf_t *b) {
    for (int k = 0; k < f->nargs; k++)
        if (buf_put(b, f->pieces[k], f->plens[k]) || render_arg(c, b, &f->args[k])) return -1;
    return buf_put(b, f->pieces[f->nargs], f->plens[f->nargs]);
}

/* columns [0, ncols) of row k of the stored result into registers base..; NULLs where there is none */
static int fetch_row_into(Conn *c, int base, int ncols, int64_t k) {
    MYSQL_ROW row = NULL;
    unsigned long *lens = NULL;
    unsigned int nf = 0;
    if (c->res && k >= 0 && (uint64_t)k < mysql_num_rows(c->res)) {
        mysql_data_seek(c->res, (uint64_t)k);
        row = mysql_fetch_row(c->res);
        lens = row ? mysql_fetch_lengths(c->res) : NULL;
        nf = mysql_num_fields(c->res);
    }
    for (int i = 0; i < ncols; i++) {
        val_t *v = &c->regs[base + i];
        if (!row || !lens || (unsigned)i >= nf || !row[i]) v->kind = V_NULL;
        else if (val_set_str(v, row[i], lens[i])) return -1;
    }
    return 0;
}

static int vm_fail(Conn *c, const char *msg) {
    c->err_no = 0;
    snprintf(c->err_msg, sizeof c->err_msg, "%s", msg);
    return VM_BUG;
}

static int server_fail(Conn *c) {
    c->err_no = mysql_errno(c->m);
    snprintf(c->err_msg, sizeof c->err_msg, "%s", mysql_error(c->m));
    return VM_SERVER;
}

static inline int retryable(unsigned int e) { return e == 1213 || e == 1205 || e == 1020; }

/* a statement I_SEND sent whose result was not read (the event failed in between): read and dropped, so the
   connection can take the next statement; 0, or -1 when the server failed meanwhile */
static int drain_inflight(Conn *c) {
    if (!c->inflight || !c->m) return 0;
    c->inflight = 0;
    if (mysql_read_query_result(c->m)) return -1;
    MYSQL_RES *r = mysql_store_result(c->m);
    if (r) mysql_free_result(r);
    return 0;
}

/* an error code of this event, counted by code (a slot per code; full: the last slot, code 0) */
static void ev_code(ev_t *ev, unsigned int code) {
    for (int i = 0; i < NCODES; i++) {
        if (ev->codes[i] == code || (i == NCODES - 1) || !ev->ncodes[i]) {
            if (!ev->ncodes[i]) ev->codes[i] = i == NCODES - 1 ? 0 : code;
            ev->ncodes[i]++;
            return;
        }
    }
}

/* the event's error codes into the connection's table (under mu) */
static void conn_codes(Conn *c, const ev_t *ev) {
    for (int i = 0; i < NCODES && ev->ncodes[i]; i++) {
        unsigned int code = ev->codes[i];
        int j = 0;
        for (; j < NCODES - 1; j++) {
            if (c->ecount[j] && c->ecode[j] == code) break;
            if (!c->ecount[j]) {
                c->ecode[j] = code;
                break;
            }
        }
        if (j == NCODES - 1) c->ecode[j] = 0; /* others */
        c->ecount[j] += ev->ncodes[i];
    }
}

/* a statement failed: a deadlock or lock wait is rolled back and the transaction runs again with the same inputs
   from the retry point (VM_OK, *pc there, counted as a retry); anything else fails the event */
static int statement_failed(Conn *c, ev_t *ev, int retry_pc, int *retries, int *pc) {
    unsigned int e = mysql_errno(c->m);
    if (!retryable(e) || retry_pc < 0 || *retries >= c->vm->max_retries) return server_fail(c);
    (*retries)++;
    ev->retries++;
    ev_code(ev, e);
    if (mysql_real_query(c->m, "ROLLBACK", 8)) return server_fail(c);
    MYSQL_RES *r = mysql_store_result(c->m);
    if (r) mysql_free_result(r);
    ev->counts[C_OTHER]++;
    *pc = retry_pc;
    return VM_OK;
}

static int vm_exec(Conn *c, int pc, ev_t *ev);

/* run the program from `pc` to I_END (the GIL released); what it did goes to *ev */
static int vm_run(Conn *c, int pc, ev_t *ev) {
    if (drain_inflight(c)) return server_fail(c);
    int rc = vm_exec(c, pc, ev);
    if (rc != VM_OK && c->inflight) drain_inflight(c); /* the error said is the event's, not the drain's */
    return rc;
}

static int vm_exec(Conn *c, int pc, ev_t *ev) {
    vm_t *vm = c->vm;
    int retry_pc = -1, retries = 0;
    long steps = 0;
    while (pc >= 0 && pc < vm->ncode) {
        if (++steps > VM_STEPS) return vm_fail(c, "the program ran 50,000,000 steps in one event");
        const ins_t *in = &vm->code[pc++];
        val_t *dst = (I_SHAPE[in->op][0] == 'R') ? &c->regs[in->a] : NULL;
        switch (in->op) {
        case I_END:
            return VM_OK;
        case I_MOV:
            if (val_copy(dst, REF(c, in->b))) return VM_OOM;
            break;
        case I_UNIF: {
            int64_t lo = as_int(REF(c, in->b)), hi = as_int(REF(c, in->c));
            val_set_int(dst, hi <= lo ? lo : lo + (int64_t)rng_below(&c->rng, (uint64_t)(hi - lo) + 1));
            break;
        }
        case I_NURAND: { /* TPC-C 2.1.6: ((random(0, A) | random(x, y)) + C) % (y - x + 1) + x */
            int64_t a = as_int(REF(c, in->b)), x = as_int(REF(c, in->c)), y = as_int(REF(c, in->d));
            int64_t cc = as_int(REF(c, in->e));
            if (a < 0 || y < x) return vm_fail(c, "NURand: A < 0 or y < x");
            int64_t span, sum;
            if (__builtin_sub_overflow(y, x, &span) || span == INT64_MAX || a == INT64_MAX)
                return vm_fail(c, "integer overflow");
            int64_t i = (int64_t)rng_below(&c->rng, (uint64_t)a + 1);
            int64_t j = x + (int64_t)rng_below(&c->rng, (uint64_t)span + 1);
            if (__builtin_add_overflow(i | j, cc, &sum)) return vm_fail(c, "integer overflow");
            val_set_int(dst, sum % (span + 1) + x);
            break;
        }
        case I_ADD: case I_SUB: case I_MUL: case I_MIN: case I_MAX: {
            const val_t *x = REF(c, in->b), *y = REF(c, in->c);
            if (is_dbl(x) || is_dbl(y)) {
                double p = as_dbl(x), q = as_dbl(y);
                val_set_dbl(dst, in->op == I_ADD ? p + q : in->op == I_SUB ? p - q : in->op == I_MUL ? p * q
                                 : in->op == I_MIN ? (p < q ? p : q) : (p > q ? p : q));
            } else {
                /* int64 overflow is undefined behaviour in C: refused as the statement program's error (issue 43
                   item 20), never a wrapped number sent to the server */
                int64_t p = as_int(x), q = as_int(y), r;
                if (in->op == I_MIN || in->op == I_MAX) r = in->op == I_MIN ? (p < q ? p : q) : (p > q ? p : q);
                else if (in->op == I_ADD ? __builtin_add_overflow(p, q, &r)
                         : in->op == I_SUB ? __builtin_sub_overflow(p, q, &r) : __builtin_mul_overflow(p, q, &r))
                    return vm_fail(c, "integer overflow");
                val_set_int(dst, r);
            }
            break;
        }
        case I_DIV: {
            double q = as_dbl(REF(c, in->c));
            if (q == 0.0) return vm_fail(c, "division by zero");
            val_set_dbl(dst, as_dbl(REF(c, in->b)) / q);
            break;
        }
        case I_IDIV: case I_MOD: { /* Python's // and %: floored */
            int64_t p = as_int(REF(c, in->b)), q = as_int(REF(c, in->c));
            if (q == 0) return vm_fail(c, "division by zero");
            if (q == -1 && p == INT64_MIN) return vm_fail(c, "integer overflow"); /* INT64_MIN / -1: SIGFPE */
            int64_t quo = p / q, rem = p % q;
            if (rem != 0 && ((rem < 0) != (q < 0))) {
                quo -= 1;
                rem += q;
            }
            val_set_int(dst, in->op == I_IDIV ? quo : rem);
            break;
        }
        case I_BOR:
            val_set_int(dst, as_int(REF(c, in->b)) | as_int(REF(c, in->c)));
            break;
        case I_EQ: case I_NE: case I_LT: case I_LE: case I_GT: case I_GE: {
            const val_t *x = REF(c, in->b), *y = REF(c, in->c);
            int cmp;
            if (x->kind == V_STR && y->kind == V_STR) {
                size_t n = x->len < y->len ? x->len : y->len;
                cmp = memcmp(x->s, y->s, n);
                if (!cmp) cmp = (x->len > y->len) - (x->len < y->len);
            } else if (is_dbl(x) || is_dbl(y)) {
                double p = as_dbl(x), q = as_dbl(y);
                cmp = (p > q) - (p < q);
            } else {
                int64_t p = as_int(x), q = as_int(y);
                cmp = (p > q) - (p < q);
            }
            int r = in->op == I_EQ ? cmp == 0 : in->op == I_NE ? cmp != 0 : in->op == I_LT ? cmp < 0
                    : in->op == I_LE ? cmp <= 0 : in->op == I_GT ? cmp > 0 : cmp >= 0;
            val_set_int(dst, r);
            break;
        }
        case I_NOT: {
            const val_t *x = REF(c, in->b);
            val_set_int(dst, x->kind == V_NULL || (is_dbl(x) ? as_dbl(x) == 0.0 : as_int(x) == 0));
            break;
        }
        case I_TRUNC:
            val_set_int(dst, as_int(REF(c, in->b)));
            break;
        case I_ROUND: { /* to k decimals, halves away from zero */
            int64_t k = as_int(REF(c, in->c));
            if (k < 0 || k > 15) return vm_fail(c, "round: 0 to 15 decimals");
            double scale = pow(10.0, (double)k);
            val_set_dbl(dst, round(as_dbl(REF(c, in->b)) * scale) / scale);
            break;
        }
        case I_JMP:
            pc = in->a;
            break;
        case I_JZ: case I_JNZ: {
            const val_t *x = REF(c, in->a);
            int zero = x->kind == V_NULL || (is_dbl(x) ? as_dbl(x) == 0.0 : as_int(x) == 0);
            if (zero == (in->op == I_JZ)) pc = in->b;
            break;
        }
        case I_EXEC: {
            if (c->inflight) return vm_fail(c, "a statement sent while another one's result is not read (I_RECV)");
            c->sqlb.len = 0;
            if (render(c, &vm->fmts[in->a], &c->sqlb)) return VM_OOM;
            if (c->res) {
                mysql_free_result(c->res);
                c->res = NULL;
            }
            if (mysql_real_query(c->m, c->sqlb.p, (unsigned long)c->sqlb.len) ||
                (!(c->res = mysql_store_result(c->m)) && mysql_field_count(c->m))) {
                int rc = statement_failed(c, ev, retry_pc, &retries, &pc);
                if (rc != VM_OK) return rc;
                break;
            }
            c->nrows = c->res ? (int64_t)mysql_num_rows(c->res) : 0;
            if (in->b < C_NONE) ev->counts[in->b]++;
            if (in->c >= 0) val_set_int(&c->regs[in->c], c->nrows);
            if (in->d >= 0 && fetch_row_into(c, in->d, in->e, 0)) return VM_OOM;
            break;
        }
        case I_SEND: /* sent without waiting: the program goes on (building the next statement) meanwhile */
            if (c->inflight) return vm_fail(c, "a statement sent while another one's result is not read (I_RECV)");
            c->sendb.len = 0;
            if (render(c, &vm->fmts[in->a], &c->sendb)) return VM_OOM;
            if (c->res) {
                mysql_free_result(c->res);
                c->res = NULL;
            }
            if (mysql_send_query(c->m, c->sendb.p, (unsigned long)c->sendb.len)) return server_fail(c);
            c->inflight = 1;
            c->inflight_class = in->b;
            break;
        case I_RECV: { /* the result of the statement I_SEND sent, as I_EXEC reads one (a deadlock: retried) */
            if (!c->inflight) return vm_fail(c, "a result read (I_RECV) with no statement sent (I_SEND)");
            c->inflight = 0;
            if (mysql_read_query_result(c->m) ||
                (!(c->res = mysql_store_result(c->m)) && mysql_field_count(c->m))) {
                int rc = statement_failed(c, ev, retry_pc, &retries, &pc);
                if (rc != VM_OK) return rc;
                break;
            }
            c->nrows = c->res ? (int64_t)mysql_num_rows(c->res) : 0;
            if (c->inflight_class < C_NONE) ev->counts[c->inflight_class]++;
            break;
        }
        case I_ROW:
            if (fetch_row_into(c, in->a, in->b, as_int(REF(c, in->c)))) return VM_OOM;
            break;
        case I_NROWS:
            val_set_int(dst, c->nrows);
            break;
        case I_FMT: case I_APPEND:
            c->tmpb.len = 0;
            if (render(c, &vm->fmts[in->b], &c->tmpb)) return VM_OOM;
            if (in->op == I_FMT || dst->kind != V_STR) {
                if (val_set_str(dst, c->tmpb.p, c->tmpb.len)) return VM_OOM;
            } else {
                size_t need = dst->len + c->tmpb.len + 1;
                if (need > dst->cap) {
                    char *grown = PyMem_RawRealloc(dst->s, need * 2);
                    if (!grown) return VM_OOM;
                    dst->s = grown;
                    dst->cap = need * 2;
                }
                memcpy(dst->s + dst->len, c->tmpb.p, c->tmpb.len);
                dst->len += c->tmpb.len;
                dst->s[dst->len] = 0;
            }
            break;
        case I_SUBSTR: { /* the first n bytes */
            const val_t *x = REF(c, in->b);
            int64_t n = as_int(REF(c, in->c));
            if (x->kind != V_STR) {
                if (val_copy(dst, x)) return VM_OOM;
                break;
            }
            size_t len = n < 0 ? 0 : (size_t)n < x->len ? (size_t)n : x->len;
            if (val_set_str(dst, x->s, len)) return VM_OOM;
            break;
        }
        case I_PICK: case I_MOVI: {
            int64_t k = as_int(REF(c, in->d));
            if (k < 0 || k >= in->c) return vm_fail(c, "a picked index out of its range");
            const val_t *src = in->op == I_PICK ? &vm->consts[in->b + k] : &c->regs[in->b + k];
            if (val_copy(dst, src)) return VM_OOM;
            break;
        }
        case I_TYPE:
            __atomic_store_n(&c->current, in->a, __ATOMIC_RELEASE);
            break;
        case I_ROLLMARK:
            ev->rollbacks++;
            break;
        case I_ERRMARK:
            ev->errmarks++;
            break;
        case I_RETRY:
            retry_pc = pc;
            retries = 0;
            break;
        case I_TIME:
            val_set_int(dst, (int64_t)time(NULL));
            break;
        case I_RSTR: { /* len bytes at a random offset of a constant string */
            const val_t *pool = &vm->consts[in->b];
            int64_t n = as_int(REF(c, in->c));
            size_t len = n < 0 ? 0 : (size_t)n < pool->len ? (size_t)n : pool->len;
            size_t off = (size_t)rng_below(&c->rng, (uint64_t)(pool->len - len) + 1);
            if (val_set_str(dst, pool->s + off, len)) return VM_OOM;
            break;
        }
        case I_PACE: { /* the next event is due when these rows are paid for at the rate; the wait is not latency */
            double rows = as_dbl(REF(c, in->a)), rate = as_dbl(REF(c, in->b));
            if (rate > 0) {
                int64_t now = now_ns(), next = c->idle_until + (int64_t)(rows / rate * 1e9);
                c->idle_until = next > now - 1000000000LL ? next : now - 1000000000LL;
            }
            break;
        }
        case I_FINISH: /* the connection has no more work this run (iiBench's max_rows): run() returns after it */
            __atomic_store_n(&c->finished, 1, __ATOMIC_RELEASE);
            break;
        case I_COALESCE: {
            const val_t *x = REF(c, in->b);
            if (val_copy(dst, x->kind == V_NULL ? REF(c, in->c) : x)) return VM_OOM;
            break;
        }
        default:
            return vm_fail(c, "no such instruction");
        }
    }
    return vm_fail(c, "the program ran past its end");
}

/* ---- vm(program, registers): checked, then set (all or nothing) ---- */

static int set_const(val_t *v, PyObject *o, int share) {
    memset(v, 0, sizeof *v);
    if (o == Py_None) return 0;
    if (PyLong_Check(o)) {
        long long i = PyLong_AsLongLong(o);
        if (i == -1 && PyErr_Occurred()) return -1;
        val_set_int(v, i);
        return 0;
    }
    if (PyFloat_Check(o)) {
        val_set_dbl(v, PyFloat_AsDouble(o));
        return 0;
    }
    if (share && PyBytes_Check(o) && PyBytes_GET_SIZE(o) > 65536) { /* a pool: shared, read only */
        v->kind = V_STR;
        v->s = PyBytes_AS_STRING(o);
        v->len = (size_t)PyBytes_GET_SIZE(o);
        v->owner = Py_NewRef(o);
        return 0;
    }
    if (PyBytes_Check(o)) {
        if (val_set_str(v, PyBytes_AS_STRING(o), (size_t)PyBytes_GET_SIZE(o))) {
            PyErr_NoMemory();
            return -1;
        }
        return 0;
    }
    PyErr_SetString(PyExc_TypeError, "a constant is None, int, float or bytes");
    return -1;
}

static int ref_ok(const vm_t *vm, int r) { return r >= 0 ? r < vm->nregs : -(long)r - 1 < vm->nconsts; }

static const char *check_ins(const vm_t *vm, const ins_t *in) {
    if (in->op < 0 || in->op >= N_INS) return "no such instruction";
    const char *shape = I_SHAPE[in->op];
    const int ops[6] = {in->a, in->b, in->c, in->d, in->e, in->f};
    size_t len = strlen(shape);
    for (size_t k = 0; k < 6; k++) {
        int v = ops[k];
        char s = k < len ? shape[k] : '.'; /* past the shape's end: unused */
        switch (s) {
        case 'R': if (v < 0 || v >= vm->nregs) return "a register out of range"; break;
        case 'r': if (v < -1 || v >= vm->nregs) return "a register out of range"; break;
        case 'X': if (!ref_ok(vm, v)) return "an operand out of range"; break;
        case 'L': if (v < 0 || v >= vm->ncode) return "a jump out of the program"; break;
        case 'F': if (v < 0 || v >= vm->nfmts) return "no such format"; break;
        case 'K': if (v < 0 || v >= vm->nconsts) return "no such constant"; break;
        case 'N': if (v < 0) return "a negative count"; break;
        case 'C': if (v < 0 || v > C_NONE) return "no such statement class"; break;
        case 'T': if (v < 0 || v >= vm->ntypes) return "no such transaction type"; break;
        default: break;
        }
    }
    switch (in->op) {
    case I_EXEC:
        if ((in->d < 0 && in->e) || (in->d >= 0 && (long)in->d + in->e > vm->nregs)) return "row columns out of range";
        break;
    case I_ROW:
        if ((long)in->a + in->b > vm->nregs) return "row columns out of range";
        break;
    case I_PICK:
        if ((long)in->b + in->c > vm->nconsts) return "picked constants out of range";
        break;
    case I_MOVI:
        if ((long)in->b + in->c > vm->nregs) return "picked registers out of range";
        break;
    case I_RSTR:
        if (vm->consts[in->b].kind != V_STR) return "a random substring's pool is not a string";
        break;
    default:
        break;
    }
    return NULL;
}

static int parse_fmt(fmt_t *f, PyObject *o, const vm_t *vm) {
    PyObject *pieces, *args;
    if (!PyArg_ParseTuple(o, "OO", &pieces, &args)) return -1;
    PyObject *fp = PySequence_Fast(pieces, "pieces"), *fa = fp ? PySequence_Fast(args, "args") : NULL;
    int rc = -1;
    if (!fa) goto out;
    Py_ssize_t na = PySequence_Fast_GET_SIZE(fa);
    if (PySequence_Fast_GET_SIZE(fp) != na + 1 || na > 10000) {
        PyErr_SetString(PyExc_ValueError, "a format has one piece more than its arguments");
        goto out;
    }
    f->nargs = (int)na;
    f->pieces = PyMem_RawCalloc((size_t)na + 1, sizeof(char *));
    f->plens = PyMem_RawCalloc((size_t)na + 1, sizeof(size_t));
    f->args = PyMem_RawCalloc((size_t)na + 1, sizeof(farg_t));
    if (!f->pieces || !f->plens || !f->args) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t k = 0; k <= na; k++) {
        PyObject *p = PySequence_Fast_GET_ITEM(fp, k);
        if (!PyBytes_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "format pieces are bytes");
            goto out;
        }
        size_t n = (size_t)PyBytes_GET_SIZE(p);
        if (!(f->pieces[k] = PyMem_RawMalloc(n + 1))) {
            PyErr_NoMemory();
            goto out;
        }
        memcpy(f->pieces[k], PyBytes_AS_STRING(p), n + 1);
        f->plens[k] = n;
    }
    for (Py_ssize_t k = 0; k < na; k++) {
        farg_t *a = &f->args[k];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fa, k), "iiii", &a->ref, &a->kind, &a->width, &a->prec))
            goto out;
        if (!ref_ok(vm, a->ref) || a->kind < F_SQL || a->kind > F_STR || a->width < -4000 || a->width > 4000 ||
            a->prec < 0 || a->prec > 30) {
            PyErr_SetString(PyExc_ValueError, "a format argument out of range");
            goto out;
        }
    }
    rc = 0;
out:
    Py_XDECREF(fp);
    Py_XDECREF(fa);
    return rc;
}

/* vm((consts, formats, code, nregs, ntypes, init_pc, event_pc, max_retries), [(register, value), ...]) */
static PyObject *Conn_vm(Conn *c, PyObject *args) {
    PyObject *consts, *fmts, *code, *init;
    vm_t *vm = PyMem_RawCalloc(1, sizeof(vm_t));
    val_t *regs = NULL;
    PyObject *fc = NULL, *ff = NULL, *fi = NULL, *fr = NULL;
    if (!vm) return PyErr_NoMemory();
    if (!PyArg_ParseTuple(args, "(OOOiiiii)O", &consts, &fmts, &code, &vm->nregs, &vm->ntypes, &vm->init_pc,
                          &vm->event_pc, &vm->max_retries, &init) ||
        !idle(c))
        goto fail;
    if (vm->nregs < 1 || vm->nregs > 100000 || vm->ntypes < 1 || vm->ntypes > 255 || vm->max_retries < 0) {
        PyErr_SetString(PyExc_ValueError, "registers, types or retries out of range");
        goto fail;
    }
    if (!(fc = PySequence_Fast(consts, "constants")) || !(ff = PySequence_Fast(fmts, "formats")) ||
        !(fi = PySequence_Fast(code, "code")) || !(fr = PySequence_Fast(init, "registers")))
        goto fail;
    if (PySequence_Fast_GET_SIZE(fc) > 1000000 || PySequence_Fast_GET_SIZE(ff) > 100000 ||
        PySequence_Fast_GET_SIZE(fi) > 1000000 || PySequence_Fast_GET_SIZE(fi) < 1) {
        PyErr_SetString(PyExc_ValueError, "a program of 1 to 1,000,000 instructions");
        goto fail;
    }
    vm->nconsts = (int)PySequence_Fast_GET_SIZE(fc);
    vm->consts = PyMem_RawCalloc((size_t)vm->nconsts + 1, sizeof(val_t));
    vm->nfmts = (int)PySequence_Fast_GET_SIZE(ff);
    vm->fmts = PyMem_RawCalloc((size_t)vm->nfmts + 1, sizeof(fmt_t));
    vm->ncode = (int)PySequence_Fast_GET_SIZE(fi);
    vm->code = PyMem_RawCalloc((size_t)vm->ncode, sizeof(ins_t));
    regs = PyMem_RawCalloc((size_t)vm->nregs, sizeof(val_t));
    if (!vm->consts || !vm->fmts || !vm->code || !regs) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int i = 0; i < vm->nconsts; i++)
        if (set_const(&vm->consts[i], PySequence_Fast_GET_ITEM(fc, i), 1)) {
            vm->nconsts = i + 1;
            goto fail;
        }
    for (int i = 0; i < vm->nfmts; i++)
        if (parse_fmt(&vm->fmts[i], PySequence_Fast_GET_ITEM(ff, i), vm)) {
            vm->nfmts = i + 1;
            goto fail;
        }
    for (int i = 0; i < vm->ncode; i++) {
        ins_t *in = &vm->code[i];
        in->a = in->b = in->c = in->d = in->e = in->f = 0;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fi, i), "i|iiiiii", &in->op, &in->a, &in->b, &in->c, &in->d,
                              &in->e, &in->f))
            goto fail;
    }
    for (int i = 0; i < vm->ncode; i++) { /* after all are read: a check may look at a constant */
        const char *bad = check_ins(vm, &vm->code[i]);
        if (bad) {
            PyErr_Format(PyExc_ValueError, "instruction %d: %s", i, bad);
            goto fail;
        }
    }
    if (vm->event_pc < 0 || vm->event_pc >= vm->ncode || vm->init_pc < -1 || vm->init_pc >= vm->ncode) {
        PyErr_SetString(PyExc_ValueError, "an entry point out of the program");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fr); i++) {
        int r;
        PyObject *value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fr, i), "iO", &r, &value)) goto fail;
        if (r < 0 || r >= vm->nregs) {
            PyErr_SetString(PyExc_ValueError, "a register out of range");
            goto fail;
        }
        val_t v;
        if (set_const(&v, value, 0)) goto fail;
        val_free(&regs[r]);
        regs[r] = v;
    }
    Py_DECREF(fc);
    Py_DECREF(ff);
    Py_DECREF(fi);
    Py_DECREF(fr);
    unsigned long long *typed = PyMem_RawCalloc((size_t)vm->ntypes * 4, sizeof(unsigned long long));
    if (!typed) {
        regs_free(regs, vm->nregs);
        vm_free(vm);
        return PyErr_NoMemory();
    }
    pthread_mutex_lock(&c->mu); /* take() reads typed under mu */
    cuts_clear(c); /* their per-type counts are the previous program's */
    if (c->vm) regs_free(c->regs, c->vm->nregs);
    vm_free(c->vm);
    PyMem_RawFree(c->typed);
    c->vm = vm;
    c->regs = regs;
    c->typed = typed;
    c->vm_inited = 0;
    c->idle_until = now_ns();
    pthread_mutex_unlock(&c->mu);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(fc);
    Py_XDECREF(ff);
    Py_XDECREF(fi);
    Py_XDECREF(fr);
    regs_free(regs, vm->nregs);
    vm_free(vm);
    return NULL;
}

/* reg(i) -> the register's value (tests) */
static PyObject *Conn_reg(Conn *c, PyObject *args) {
    int r;
    if (!PyArg_ParseTuple(args, "i", &r) || !idle(c)) return NULL;
    if (!c->vm || r < 0 || r >= c->vm->nregs) {
        PyErr_SetString(PyExc_IndexError, "no such register");
        return NULL;
    }
    val_t *v = &c->regs[r];
    switch (v->kind) {
    case V_INT:
        return PyLong_FromLongLong(v->i);
    case V_DBL:
        return PyFloat_FromDouble(v->d);
    case V_STR:
        return PyBytes_FromStringAndSize(v->s, (Py_ssize_t)v->len);
    default:
        Py_RETURN_NONE;
    }
}

/* finished() -> whether the program said it has no more work (I_FINISH); events() -> the cumulative events */
static PyObject *Conn_finished(Conn *c, PyObject *noargs) {
    return PyBool_FromLong(__atomic_load_n(&c->finished, __ATOMIC_ACQUIRE));
}

static PyObject *Conn_events(Conn *c, PyObject *noargs) {
    pthread_mutex_lock(&c->mu);
    unsigned long long e = c->events;
    pthread_mutex_unlock(&c->mu);
    return PyLong_FromUnsignedLongLong(e);
}

/* current() -> the transaction type under way (or the last one): a failed event's errors are charged to it */
static PyObject *Conn_current(Conn *c, PyObject *noargs) {
    return PyLong_FromLong(__atomic_load_n(&c->current, __ATOMIC_ACQUIRE));
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
   the open loop's latency limit; `skipped`: due times skipped for it before this event. A VM program's latencies
   carry their transaction type in bits 56-63 (take()'s reader splits them; 2^56 ns is two years). */
static int publish(Conn *c, int64_t now, int64_t lat, int64_t svc, int late, unsigned long long skipped, int ended,
                   const ev_t *ev) {
    int ok = 1;
    int type = c->vm ? __atomic_load_n(&c->current, __ATOMIC_ACQUIRE) : 0;
    int64_t tag = (int64_t)type << 56;
    pthread_mutex_lock(&c->mu);
    cut_record(c, now);
    c->skipped += skipped;
    if (ended) {
        ok = room(&c->lat, c->nlat, &c->caplat) && (svc < 0 || room(&c->svc, c->nsvc, &c->capsvc));
        if (ok) {
            c->lat[c->nlat++] = lat | tag;
            if (svc >= 0) c->svc[c->nsvc++] = svc | tag;
            c->events++;
            c->late += late;
            if (c->typed) c->typed[type * 4]++;
        }
    }
    c->reads += ev->counts[C_READ];
    c->writes += ev->counts[C_WRITE];
    c->other += ev->counts[C_OTHER];
    c->errors += ev->retries + ev->errmarks; /* a retry is an error of the run, not of its type (Slot.retry()) */
    conn_codes(c, ev);
    if (c->typed) {
        c->typed[type * 4 + 1] += ev->errmarks;
        c->typed[type * 4 + 2] += ev->rollbacks;
        c->typed[type * 4 + 3] += ev->retries;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

/* one event of whichever program is set: VM_OK, or what failed (its error in err_no/err_msg) */
static int one_event(Conn *c, ev_t *ev) {
    if (c->vm) return vm_run(c, c->vm->event_pc, ev);
    MYSQL_STMT *bad = event(c, ev->counts);
    if (!bad) return VM_OK;
    c->err_no = bad == TEXT_FAILED ? mysql_errno(c->m) : mysql_stmt_errno(bad);
    snprintf(c->err_msg, sizeof c->err_msg, "%s", bad == TEXT_FAILED ? mysql_error(c->m) : mysql_stmt_error(bad));
    return VM_SERVER;
}

/* a paced program's wait for its next start (or stop()), in slices of at most 50 ms */
static void idle_wait(Conn *c) {
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        int64_t left = c->idle_until - now_ns();
        if (left <= 0) return;
        if (left > 50000000) left = 50000000;
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
    }
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
    if (!c->vm && (!c->ops || c->nops == 0)) {
        PyErr_SetString(PyExc_ValueError, "no program");
        goto refused;
    }
    /* an interrupt that came while no run() was in progress: this call is the one it stops */
    if (__atomic_exchange_n(&c->stop, 0, __ATOMIC_ACQ_REL)) {
        leave(c);
        Py_RETURN_NONE;
    }
    int status = VM_OK, oom = 0;
    Py_INCREF(queue); /* the queue outlives the run even if Python drops it meanwhile */
    Py_BEGIN_ALLOW_THREADS
    int64_t deadline = now_ns() + (int64_t)(seconds * 1e9);
    if (c->vm && !c->vm_inited && c->vm->init_pc >= 0) { /* the connection's init code, once */
        ev_t ev = {{0, 0, 0}, 0, 0, 0};
        status = vm_run(c, c->vm->init_pc, &ev);
        publish(c, now_ns(), 0, 0, 0, 0, 0, &ev);
    }
    if (c->vm && status == VM_OK) c->vm_inited = 1;
    while (status == VM_OK && !__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&c->finished, __ATOMIC_ACQUIRE)) {
        ev_t ev = {{0, 0, 0}, 0, 0, 0};
        int64_t due = 0;
        unsigned long long skipped = 0;
        if (q) {
            if (!due_claim(q, now_ns(), &due, &skipped)) { /* nothing pushed yet: Python draws ahead */
                publish(c, now_ns(), 0, 0, 0, skipped, 0, &ev);
                struct timespec ms = {0, 1000000};
                nanosleep(&ms, NULL);
                if (now_ns() >= deadline) break;
                continue;
            }
            if (!wait_due(c, due)) {
                publish(c, now_ns(), 0, 0, 0, skipped, 0, &ev);
                break; /* stopped before its time: not run */
            }
        }
        int64_t t0 = now_ns();
        status = one_event(c, &ev);
        int64_t t1 = now_ns();
        int64_t lat = q ? t1 - due : t1 - t0;
        if (!publish(c, t1, lat, q ? t1 - t0 : -1, q && q->limit_ns && lat > q->limit_ns, skipped, status == VM_OK,
                     &ev)) {
            oom = 1;
            break;
        }
        if (status != VM_OK || t1 >= deadline || __atomic_load_n(&c->finished, __ATOMIC_ACQUIRE)) break;
        if (c->vm && c->idle_until > t1) idle_wait(c);
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(queue);
    __atomic_store_n(&c->stop, 0, __ATOMIC_RELEASE); /* consumed: one interrupt stops one run() */
    PyObject *result = NULL;
    if (oom || status == VM_OOM)
        PyErr_NoMemory();
    else if (status == VM_SERVER)
        raise_mysql(c->err_no, c->err_msg);
    else if (status == VM_BUG)
        PyErr_Format(PyExc_ValueError, "the program failed: %s", c->err_msg);
    else
        result = Py_NewRef(Py_None);
    leave(c);
    return result;
refused:
    leave(c);
    return NULL;
}

/* grid(t0_ns): the worker's seconds are t0_ns + k s (CLOCK_MONOTONIC): from the next one on, take(until) gives the
   state as of an edge */
static PyObject *Conn_grid(Conn *c, PyObject *args) {
    long long t0;
    if (!PyArg_ParseTuple(args, "L", &t0)) return NULL;
    int64_t now = now_ns();
    pthread_mutex_lock(&c->mu);
    c->cut_next = now < t0 ? t0 : t0 + ((now - t0) / SECOND_NS + 1) * SECOND_NS;
    if (c->cut_next == 0) c->cut_next = 1; /* 0 means no grid */
    cuts_clear(c);
    pthread_mutex_unlock(&c->mu);
    Py_RETURN_NONE;
}

/* take([until]) -> (events, reads, writes, other, latencies: bytes of int64 ns since the last take, service times
   (open loop), late, skipped, errors, per type ((events, errors, rollbacks, retries), ...) or None without a VM
   program, {error code: count} of the retried errors (0: codes beyond the first NCODES - 1)); counters
   cumulative. With `until` (an edge of grid(), CLOCK_MONOTONIC ns, taken in order): the state
   as of that edge -- events that ended after it stay for the next take. May come while run() is in progress (the
   reporter's thread): what it reads is under mu */
static PyObject *Conn_take(Conn *c, PyObject *args) {
    long long until = -1;
    if (!PyArg_ParseTuple(args, "|L", &until)) return NULL;
    int64_t *lat, *svc;
    size_t n, nsvc;
    unsigned long long e, r, w, o, late, sk, errors;
    unsigned long long typed[255 * 4];
    unsigned long long ecount[NCODES];
    unsigned int ecode[NCODES];
    int ntypes;
    pthread_mutex_lock(&c->mu);
    memcpy(ecode, c->ecode, sizeof ecode); /* (a slot's code never changes once given) */
    int now_types = c->vm && c->typed ? c->vm->ntypes : 0;
    cut_t *k = NULL;
    int before = 0; /* the cuts before k: stale, k's state includes theirs */
    if (until >= 0) {
        for (; before < c->ncuts; before++) {
            if (c->cuts[before].last >= until) { /* it covers `until` or, if those were dropped, comes first after */
                k = &c->cuts[before];
                break;
            }
        }
    }
    if (k) {
        n = k->nlat;
        nsvc = k->nsvc;
        lat = PyMem_RawMalloc((n ? n : 1) * sizeof(int64_t));
        svc = PyMem_RawMalloc((nsvc ? nsvc : 1) * sizeof(int64_t));
        if (!lat || !svc) {
            pthread_mutex_unlock(&c->mu);
            PyMem_RawFree(lat);
            PyMem_RawFree(svc);
            return PyErr_NoMemory();
        }
        /* the buffers are NULL until their first value (closed loop: svc always): no memcpy from NULL, even of 0 */
        if (c->lat) {
            memcpy(lat, c->lat, n * sizeof(int64_t));
            memmove(c->lat, c->lat + n, (c->nlat - n) * sizeof(int64_t));
        }
        if (c->svc) {
            memcpy(svc, c->svc, nsvc * sizeof(int64_t));
            memmove(c->svc, c->svc + nsvc, (c->nsvc - nsvc) * sizeof(int64_t));
        }
        c->nlat -= n;
        c->nsvc -= nsvc;
        e = k->e, r = k->r, w = k->w, o = k->o, late = k->late, sk = k->sk, errors = k->errors;
        memcpy(ecount, k->ecount, sizeof ecount);
        ntypes = k->ntypes == now_types ? k->ntypes : 0;
        if (ntypes) memcpy(typed, k->typed, sizeof(unsigned long long) * 4 * (size_t)ntypes);
        for (int i = before; i < c->ncuts; i++) {
            c->cuts[i].nlat -= n;
            c->cuts[i].nsvc -= nsvc;
        }
        cuts_drop(c, k->last > until ? before : before + 1); /* one that also covers later edges stays */
    } else {
        lat = c->lat, svc = c->svc;
        n = c->nlat, nsvc = c->nsvc;
        e = c->events, r = c->reads, w = c->writes, o = c->other, late = c->late, sk = c->skipped;
        errors = c->errors;
        memcpy(ecount, c->ecount, sizeof ecount);
        ntypes = now_types;
        if (ntypes) memcpy(typed, c->typed, sizeof(unsigned long long) * 4 * (size_t)ntypes);
        c->lat = c->svc = NULL;
        c->nlat = c->caplat = c->nsvc = c->capsvc = 0;
        cuts_clear(c); /* all before `until` (none crossed it) */
    }
    if (until >= 0 && c->cut_next && c->cut_next <= until) c->cut_next = until + SECOND_NS;
    pthread_mutex_unlock(&c->mu);
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)lat, (Py_ssize_t)(n * sizeof(int64_t)));
    PyObject *svc_bytes = PyBytes_FromStringAndSize((const char *)svc, (Py_ssize_t)(nsvc * sizeof(int64_t)));
    PyMem_RawFree(lat);
    PyMem_RawFree(svc);
    PyObject *types = ntypes ? PyTuple_New(ntypes) : Py_NewRef(Py_None);
    for (int j = 0; types && j < ntypes; j++) {
        PyObject *t = Py_BuildValue("(KKKK)", typed[4 * j], typed[4 * j + 1], typed[4 * j + 2], typed[4 * j + 3]);
        if (!t) Py_CLEAR(types);
        else PyTuple_SET_ITEM(types, j, t);
    }
    PyObject *codes = PyDict_New();
    for (int j = 0; codes && j < NCODES; j++) {
        if (!ecount[j]) continue;
        PyObject *key = PyLong_FromUnsignedLong(ecode[j]), *val = PyLong_FromUnsignedLongLong(ecount[j]);
        if (!key || !val || PyDict_SetItem(codes, key, val)) Py_CLEAR(codes);
        Py_XDECREF(key);
        Py_XDECREF(val);
    }
    if (!bytes || !svc_bytes || !types || !codes) {
        Py_XDECREF(bytes);
        Py_XDECREF(svc_bytes);
        Py_XDECREF(types);
        Py_XDECREF(codes);
        return NULL;
    }
    return Py_BuildValue("(KKKKNNKKKNN)", e, r, w, o, bytes, svc_bytes, late, sk, errors, types, codes);
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
    rc = drain_inflight(c) || mysql_real_query(c->m, sql, (unsigned long)len);
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
    {"take", (PyCFunction)Conn_take, METH_VARARGS,
     "cumulative counters, the latencies and service times since the last take (as of an edge), late and skipped"},
    {"grid", (PyCFunction)Conn_grid, METH_VARARGS, "grid(t0_ns): the worker's second edges"},
    {"query", (PyCFunction)Conn_query, METH_VARARGS, "a plain statement"},
    {"stop", (PyCFunction)Conn_stop, METH_NOARGS, "run() returns after the event in flight"},
    {"close", (PyCFunction)Conn_close, METH_NOARGS, "close the statements and the connection"},
    {"draw", (PyCFunction)Conn_draw, METH_VARARGS, "ids of the program's distribution"},
    {"vm", (PyCFunction)Conn_vm, METH_VARARGS, "vm(program, registers): a statement program (load/program.py)"},
    {"reg", (PyCFunction)Conn_reg, METH_VARARGS, "reg(i) -> a register's value"},
    {"current", (PyCFunction)Conn_current, METH_NOARGS, "the transaction type under way"},
    {"finished", (PyCFunction)Conn_finished, METH_NOARGS, "the program has no more work (I_FINISH)"},
    {"events", (PyCFunction)Conn_events, METH_NOARGS, "the cumulative events"},
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
