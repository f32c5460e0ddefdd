// Checks that a query row's flash attention does not depend on anything but the KV positions
// its mask lets through, in cache order: one row decoded alone (2 threads, a 2,048-cell cache,
// the positions at their own cells) against the same row as the last of 4 (1 thread, a
// 4,096-cell cache, the same K/V rows moved 37 cells on, other cells with junk around them, the
// other rows with masks of their own), compared bit for bit, for SmolLM2-135M's shape (head
// size 64, 9 query heads, 3 K/V heads, F16 cache laid out as llama.cpp's).
//   fa-same [depth]   prints "identical" (exit 0) or the first difference (exit 1)
#include "ggml-cpu.h"
#include "ggml.h"
#include "node-timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DK = 64, NH = 9, NKV = 3 };

// the positions the row sees: every cell below depth but each third (another sequence's)
static int seen(int c, int depth) { return c < depth && c % 3 != 1; }

static void run(int n_kv, int nq, int shift, int depth, int nth, const float * q_last, const float * kv_rows, float * out_last) {
    struct ggml_init_params ip = { (size_t) 64 << 20, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * qc = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, DK, NH, nq);
    struct ggml_tensor * kc = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, DK * NKV, n_kv);
    struct ggml_tensor * vc = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, DK * NKV, n_kv);
    struct ggml_tensor * m  = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, nq);
    for (int i = 0; i < DK * NH * nq; i++) {
        ((float *) qc->data)[i] = i >= DK * NH * (nq - 1) ? q_last[i - DK * NH * (nq - 1)] : rnd();
    }
    for (int c = 0; c < n_kv; c++) {
        const int src = c - shift;  // the checked row's cell, or junk
        for (int i = 0; i < DK * NKV; i++) {
            const int ok = src >= 0 && src < depth;
            ((ggml_fp16_t *) kc->data)[c * DK * NKV + i] = ggml_fp32_to_fp16(ok ? kv_rows[(src * 2 + 0) * DK * NKV + i] : 4 * rnd());
            ((ggml_fp16_t *) vc->data)[c * DK * NKV + i] = ggml_fp32_to_fp16(ok ? kv_rows[(src * 2 + 1) * DK * NKV + i] : 4 * rnd());
        }
        for (int r = 0; r < nq; r++) {
            const int see = r == nq - 1 ? seen(c - shift, depth) && c >= shift : (c + r) % 2 == 0;
            ((ggml_fp16_t *) m->data)[r * n_kv + c] = ggml_fp32_to_fp16(see ? 0.0f : -INFINITY);
        }
    }
    struct ggml_tensor * q = ggml_permute(ctx, qc, 0, 2, 1, 3);
    struct ggml_tensor * k = ggml_view_3d(ctx, kc, DK, n_kv, NKV, kc->nb[1], DK * 2, 0);
    struct ggml_tensor * v = ggml_view_3d(ctx, vc, DK, n_kv, NKV, vc->nb[1], DK * 2, 0);
    struct ggml_tensor * out = ggml_flash_attn_ext(ctx, q, k, v, m, 1.0f / sqrtf(DK), 0.0f, 0.0f);
    ggml_prec_set_acc(out, GGML_PREC_F32);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_graph_compute_with_ctx(ctx, gf, nth);
    // out: [DK, NH, nq]
    memcpy(out_last, (float *) out->data + DK * NH * (nq - 1), sizeof(float) * DK * NH);
    ggml_free(ctx);
}

int main(int argc, char ** argv) {
    const int depth = argc > 1 ? atoi(argv[1]) : 2000;
    srand(1);
    float * q = malloc(sizeof(float) * DK * NH);
    float * kv = malloc(sizeof(float) * depth * 2 * DK * NKV);
    for (int i = 0; i < DK * NH; i++) {
        q[i] = rnd();
    }
    for (long i = 0; i < (long) depth * 2 * DK * NKV; i++) {
        kv[i] = 4 * rnd();
    }
    float a[DK * NH], b[DK * NH];
    run((depth + 255) / 256 * 256, 1, 0, depth, 2, q, kv, a);
    run((depth + 37 + 1024 + 255) / 256 * 256, 4, 37, depth, 1, q, kv, b);
    for (int i = 0; i < DK * NH; i++) {
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            printf("depth %d: differs at %d: %.9g vs %.9g\n", depth, i, a[i], b[i]);
            return 1;
        }
    }
    printf("depth %d: identical\n", depth);
    return 0;
}
