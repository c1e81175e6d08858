/* Compiled register loops of metastore.stats.hll (the numpy code there, HyperLogLog._add_dense and _unpack_registers,
 * is the reference and the fallback; metastore/stats/_hll_native.pyi is the interface). Both release the GIL.
 *
 * add_dense(hashes, p, registers): see below.
 * max_packed_registers(bodies, width, out): for every whole body of len(out) registers of `width` bits (1..8)
 *     packed as Hive packs a dense HyperLogLog (each group of eight registers one big-endian field of `width`
 *     bytes, first register in the most significant bits) that `bodies` holds back to back, out[j] =
 *     max(out[j], register j of that body). `bodies` is any C-contiguous bytes-like object, `out` a writable
 *     C-contiguous buffer of bytes whose length is a positive multiple of 8. ValueError for another width or a
 *     `bodies` that is not whole bodies.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* the loop for one width, inlined with `width` a constant (its shifts and byte reads then unroll) */
static inline __attribute__((always_inline)) void max_bodies(const uint8_t *src, Py_ssize_t count,
                                                             Py_ssize_t groups, uint8_t *reg, const int width) {
    const uint64_t mask = (width == 8) ? 0xFF : ((1u << width) - 1);
    for (Py_ssize_t k = 0; k < count; k++) {
        uint8_t *dst = reg;
        for (Py_ssize_t g = 0; g < groups; g++, src += width, dst += 8) {
            uint64_t word = 0;
            for (int b = 0; b < width; b++) word = (word << 8) | src[b];
            for (int i = 0; i < 8; i++) {
                uint8_t v = (uint8_t)((word >> (width * (7 - i))) & mask);
                dst[i] = v > dst[i] ? v : dst[i];
            }
        }
    }
}

static PyObject *max_packed_registers(PyObject *self, PyObject *args) {
    PyObject *bodies_obj, *out_obj;
    int width;
    if (!PyArg_ParseTuple(args, "OiO:max_packed_registers", &bodies_obj, &width, &out_obj)) return NULL;
    if (width < 1 || width > 8) {
        PyErr_Format(PyExc_ValueError, "max_packed_registers: width %d is not 1..8", width);
        return NULL;
    }
    Py_buffer bodies = {0}, out = {0};
    if (PyObject_GetBuffer(bodies_obj, &bodies, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&bodies);
        return NULL;
    }
    Py_ssize_t m = out.len;
    Py_ssize_t body_bytes = m / 8 * width;
    if (m <= 0 || m % 8 || bodies.len % body_bytes) {
        PyErr_Format(PyExc_ValueError,
                     "max_packed_registers: %zd bytes are not whole bodies of %zd registers of %d bits", bodies.len,
                     m, width);
        PyBuffer_Release(&bodies);
        PyBuffer_Release(&out);
        return NULL;
    }
    const uint8_t *src = (const uint8_t *)bodies.buf;
    uint8_t *reg = (uint8_t *)out.buf;
    Py_ssize_t count = bodies.len / body_bytes, groups = m / 8;
    Py_BEGIN_ALLOW_THREADS
    switch (width) {
    case 1: max_bodies(src, count, groups, reg, 1); break;
    case 2: max_bodies(src, count, groups, reg, 2); break;
    case 3: max_bodies(src, count, groups, reg, 3); break;
    case 4: max_bodies(src, count, groups, reg, 4); break;
    case 5: max_bodies(src, count, groups, reg, 5); break;
    case 6: max_bodies(src, count, groups, reg, 6); break;
    case 7: max_bodies(src, count, groups, reg, 7); break;
    default: max_bodies(src, count, groups, reg, 8); break;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bodies);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* add_dense(hashes, p, registers): Hive's dense add of every 64-bit hash: register h & (2**p - 1) raised to
 * trailing zeros(h >>> p) + 1 (65 when h >>> p is 0). hashes: C-contiguous 8-byte items; registers: writable
 * C-contiguous bytes, 2**p of them. */
static PyObject *add_dense(PyObject *self, PyObject *args) {
    PyObject *hashes_obj, *registers_obj;
    int p;
    if (!PyArg_ParseTuple(args, "OiO:add_dense", &hashes_obj, &p, &registers_obj)) return NULL;
    if (p < 4 || p > 16) {
        PyErr_Format(PyExc_ValueError, "add_dense: p %d is not 4..16", p);
        return NULL;
    }
    Py_buffer hashes = {0}, registers = {0};
    if (PyObject_GetBuffer(hashes_obj, &hashes, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(registers_obj, &registers, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&hashes);
        return NULL;
    }
    if (hashes.len % 8 || registers.len != ((Py_ssize_t)1 << p)) {
        PyErr_Format(PyExc_ValueError, "add_dense: %zd bytes of hashes, %zd registers for p=%d", hashes.len,
                     registers.len, p);
        PyBuffer_Release(&hashes);
        PyBuffer_Release(&registers);
        return NULL;
    }
    const uint64_t *h = (const uint64_t *)hashes.buf;
    uint8_t *reg = (uint8_t *)registers.buf;
    Py_ssize_t n = hashes.len / 8;
    const uint64_t mask = ((uint64_t)1 << p) - 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t rest = h[i] >> p;
        uint8_t rank = rest ? (uint8_t)(__builtin_ctzll(rest) + 1) : 65;
        uint8_t *r = reg + (h[i] & mask);
        if (rank > *r) *r = rank;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&registers);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"add_dense", add_dense, METH_VARARGS,
     "add_dense(hashes, p, registers): Hive's dense HyperLogLog add of every 64-bit hash."},
    {"max_packed_registers", max_packed_registers, METH_VARARGS,
     "max_packed_registers(bodies, width, out): out[j] = max(out[j], register j of each packed dense body)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "metastore.stats._hll_native",
    "Compiled HyperLogLog register loop (numpy reference in hll.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__hll_native(void) { return PyModule_Create(&module); }
