/* test_half_convert.c: the block conversions of cpu/cpu_half_convert.h against half.h's
 * per-element functions, bit for bit: every fp16 value, a sweep of fp32 bit patterns (all
 * exponents, rounding ties, subnormals, inf, NaN), and lengths that exercise the vector body
 * and the scalar tail. */
#include <string.h>

#include "cpu/cpu_half_convert.h"
#include "ctest.h"

CTEST(half_convert_fp16_all_values) {
    static ampc_half h[65536];
    static float f[65536];
    for (int i = 0; i < 65536; i++) h[i] = (ampc_half)i;
    ampc_cpu_f16_to_f32(h, f, 65536);
    int bad = 0;
    for (int i = 0; i < 65536; i++) {
        float r = ampc_half_to_f32(h[i]);
        bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
        /* a signalling fp16 NaN may widen quietened (VCVTPH2PS): same sign and payload */
        if (nan ? !(isnan(f[i]) && (ampc_f32_bits(f[i]) & ~0x00400000u) == (ampc_f32_bits(r) & ~0x00400000u))
                : memcmp(&r, &f[i], sizeof r) != 0)
            bad++;
    }
    CHECK(bad == 0);
}

CTEST(half_convert_fp32_sweep) {
    enum { N = 4099 }; /* not a multiple of 8 or 16: the tail runs too */
    static float s[N];
    static ampc_half o[N];
    static ampc_bfloat16 ob[N];
    static float back[N];
    int bad16 = 0, bad_bf = 0, bad_bfw = 0;
    /* 2^32 / 4099 / 97 steps with a stride co-prime to the mantissa: every exponent, odd and
     * even mantissas, the tie patterns 0x1000 / 0x8000 appear through the explicit list below */
    for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)N * 9973u) {
        for (int i = 0; i < N; i++) s[i] = ampc_bits_f32((uint32_t)(base + (uint64_t)i * 2417u));
        static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u,
                                           0x7f800001u, 0xffbfffffu, 0x477ff000u, 0x477fefffu, 0x33000000u,
                                           0x33000001u, 0x38800000u, 0x387fffffu, 0x3f801000u, 0x3f803000u,
                                           0x3f808000u, 0x3f818000u, 0x00000001u, 0x807fffffu};
        for (int i = 0; i < (int)(sizeof special / sizeof special[0]); i++) s[i] = ampc_bits_f32(special[i]);
        ampc_cpu_f32_to_f16(s, o, N);
        ampc_cpu_f32_to_bf16(s, ob, N);
        ampc_cpu_bf16_to_f32(ob, back, N);
        for (int i = 0; i < N; i++) {
            if (o[i] != ampc_f32_to_half(s[i])) bad16++;
            if (ob[i] != ampc_f32_to_bf16(s[i])) bad_bf++;
            float r = ampc_bf16_to_f32(ob[i]);
            if (memcmp(&r, &back[i], sizeof r) != 0) bad_bfw++;
        }
    }
    CHECK(bad16 == 0);
    CHECK(bad_bf == 0);
    CHECK(bad_bfw == 0);
    /* short runs: tails only */
    for (int n = 0; n < 20; n++) {
        ampc_cpu_f32_to_f16(s, o, n);
        for (int i = 0; i < n; i++) CHECK(o[i] == ampc_f32_to_half(s[i]));
    }
}
