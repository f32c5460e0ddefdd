// One decode step's flash attention, as llama.cpp's graph asks the CPU backend for it: per layer
// one FLASH_ATTN_EXT node over an F16 KV cache laid out as llama.cpp's (a cell's row holds every
// K/V head), a mask that lets the first `depth` cells through, and `layers` layers with a cache
// of their own, so that at depth the K/V rows come from memory as in a real model, not from a
// cache-resident copy. Prints the median and best microseconds per step over `reps` steps.
//
//   fa-node DK n_head n_head_kv n_query depth threads reps [layers]
//   SEP=1 fa-node ...   # each K/V head's rows contiguous (a layout llama.cpp does not use)
#include "ggml-cpu.h"
#include "ggml.h"
#include "node-timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char ** argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: %s DK n_head n_head_kv n_query depth threads reps [layers]\n", argv[0]);
        return 2;
    }
    const int DK = atoi(argv[1]), NH = atoi(argv[2]), NKV = atoi(argv[3]), NQ = atoi(argv[4]);
    const int depth = atoi(argv[5]), nth = atoi(argv[6]), reps = atoi(argv[7]);
    const int L = argc > 8 ? atoi(argv[8]) : 1;
    const int sep = getenv("SEP") != NULL;
    const int n_kv = (depth + 255) / 256 * 256;  // llama.cpp pads the cells it attends to 256

    const size_t bytes = (size_t) L * (2u * DK * NKV * n_kv * 2 + DK * NH * NQ * 4 + n_kv * NQ * 2 + DK * NH * NQ * 4) + (64u << 20);
    struct ggml_init_params ip = { bytes, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    struct ggml_tensor * out = NULL;
    srand(1);
    for (int l = 0; l < L; l++) {
        struct ggml_tensor * qc = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, DK, NH, NQ);
        struct ggml_tensor * kc = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, DK * NKV, n_kv);
        struct ggml_tensor * vc = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, DK * NKV, n_kv);
        struct ggml_tensor * m  = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, NQ);
        for (int i = 0; i < DK * NH * NQ; i++) {
            ((float *) qc->data)[i] = rnd();
        }
        for (long i = 0; i < (long) DK * NKV * n_kv; i++) {
            ((ggml_fp16_t *) kc->data)[i] = ggml_fp32_to_fp16(rnd());
            ((ggml_fp16_t *) vc->data)[i] = ggml_fp32_to_fp16(rnd());
        }
        for (int r = 0; r < NQ; r++) {
            for (int c = 0; c < n_kv; c++) {
                ((ggml_fp16_t *) m->data)[r * n_kv + c] = ggml_fp32_to_fp16(c <= depth - NQ + r ? 0.0f : -INFINITY);
            }
        }
        struct ggml_tensor * q = ggml_permute(ctx, qc, 0, 2, 1, 3);
        struct ggml_tensor * k = sep ? ggml_view_3d(ctx, kc, DK, n_kv, NKV, DK * 2, (size_t) DK * 2 * n_kv, 0)
                                     : ggml_view_3d(ctx, kc, DK, n_kv, NKV, kc->nb[1], DK * 2, 0);
        struct ggml_tensor * v = sep ? ggml_view_3d(ctx, vc, DK, n_kv, NKV, DK * 2, (size_t) DK * 2 * n_kv, 0)
                                     : ggml_view_3d(ctx, vc, DK, n_kv, NKV, vc->nb[1], DK * 2, 0);
        out = ggml_flash_attn_ext(ctx, q, k, v, m, 1.0f / sqrtf(DK), 0.0f, 0.0f);
        ggml_prec_set_acc(out, GGML_PREC_F32);
        ggml_build_forward_expand(gf, out);
    }

    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(nth);
    struct ggml_threadpool * tp = ggml_threadpool_new(&tpp);
    struct ggml_cplan plan = ggml_graph_plan(gf, nth, tp);
    plan.work_data = malloc(plan.work_size + 64);
    double * t = malloc(sizeof(double) * reps);
    for (int i = 0; i < 3; i++) {
        ggml_graph_compute(gf, &plan);
    }
    for (int i = 0; i < reps; i++) {
        const double a = now_us();
        ggml_graph_compute(gf, &plan);
        t[i] = now_us() - a;
    }
    qsort(t, reps, sizeof(double), cmp);
    double cs = 0;
    for (int i = 0; i < DK * NH * NQ; i++) {
        cs += ((float *) out->data)[i];
    }
    printf("layers=%d DK=%d heads=%d/%d rows=%d depth=%d threads=%d%s: median %.1f us, best %.1f us (checksum %.6f)\n", L, DK, NH,
           NKV, NQ, depth, nth, sep ? " sep" : "", t[reps / 2], t[0], cs);
    ggml_threadpool_free(tp);
    ggml_free(ctx);
    return 0;
}
