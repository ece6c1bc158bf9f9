// client.ts - a small typed client of attention-server. tests/test_api_clients.c
// compiles it with `tsc --strict` against the types openapi-typescript
// generates from /openapi.json, then runs it with node against a server:
//
//     node client.js http://127.0.0.1:PORT
//
// It sends every request of README.md and api/examples/ (requests.ts, which
// the test writes from them as typed literals), reads each reply through the
// document's types only (no cast, no `any`), and for each reply whose
// attn_weights is [H][T][S] asks for it again flat and base64 and checks that
// the three forms hold the same float32 values. It prints one JSON report.
import type { ApiError, Call, Reply, Schemas, Tensor } from "./api";
import { requests } from "./requests";

declare const process: { argv: string[]; exitCode?: number };

interface Outcome {
    name: string;
    status: number;
    module?: string;
    error_code?: string;
    attn_weights?: { rank: number; shape: number[] };
    forms_checked?: number;
}

/** The rank of a nested tensor: how deep its first element lies. */
function rank(t: Tensor): number {
    let r = 0;
    for (let x: unknown = t; Array.isArray(x); x = x[0]) r++;
    return r;
}

/** attn_weights of one sequence over several heads, [H][T][S]: the narrowing
 * a reader needs, checked at run time. */
function isRank3(t: Tensor | undefined): t is Schemas["Numbers3"] {
    return t !== undefined && Array.isArray(t) && rank(t) === 3;
}

async function post(base: string, c: Call): Promise<{ status: number; body: Reply | ApiError }> {
    const res = await fetch(base + c.path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(c.body),
    });
    return { status: res.status, body: await res.json() };
}

function isError(b: Reply | ApiError): b is ApiError {
    return "error" in b;
}

/** A map output with top_k is {indices, values}; without, a tensor. */
type MapOutput = NonNullable<Reply["attn_weights"]>;
function isTopK(m: MapOutput): m is Schemas["TopK"] {
    return !Array.isArray(m) && "indices" in m;
}

/** attn_weights as a tensor (undefined when absent or top-k). */
function weightsOf(r: Reply): Tensor | undefined {
    const m = r.attn_weights;
    return m === undefined || isTopK(m) ? undefined : m;
}

/** The float32 values of a base64 tensor. */
function floats(t: Schemas["BinaryReply"]): number[] {
    const bin = atob(t.base64);
    const view = new DataView(new ArrayBuffer(bin.length));
    for (let i = 0; i < bin.length; i++) view.setUint8(i, bin.charCodeAt(i));
    const out: number[] = [];
    for (let i = 0; i + 4 <= bin.length; i += 4) out.push(view.getFloat32(i, true));
    return out;
}

/** Asks for c's attn_weights flat and base64 (full precision) and checks them
 * against the nested weights. Returns how many forms agreed, or throws. */
async function checkForms(base: string, c: Call): Promise<number> {
    let nested: number[] = [];
    let checked = 0;
    for (const output_format of ["nested", "flat", "base64"] as const) {
        const r = await post(base, { ...c, body: { ...c.body, output_format, precision: undefined } });
        if (isError(r.body)) throw new Error(`${c.name} ${output_format}: ${r.body.error.message}`);
        const w = weightsOf(r.body);
        let values: number[];
        if (isRank3(w)) {
            const heads: number[][][] = w;
            values = heads.flat(2);
        } else if (w !== undefined && !Array.isArray(w) && "data" in w) {
            values = w.data;   // FlatTensor
        } else if (w !== undefined && !Array.isArray(w)) {
            if (w.dtype !== "float32") throw new Error(`${c.name}: dtype ${w.dtype}`);
            values = floats(w);   // BinaryReply
        } else {
            throw new Error(`${c.name} ${output_format}: attn_weights is not in the ${output_format} form`);
        }
        if (output_format === "nested") nested = values;
        const same = values.length === nested.length &&
            values.every((v, i) => Math.fround(v) === Math.fround(nested[i]));
        if (!same) throw new Error(`${c.name}: ${output_format} attn_weights differ from the nested ones`);
        checked++;
    }
    return checked;
}

async function main(): Promise<void> {
    const base = process.argv[2];
    const outcomes: Outcome[] = [];
    for (const c of requests) {
        const r = await post(base, c);
        const o: Outcome = { name: c.name, status: r.status };
        if (isError(r.body)) {
            o.error_code = r.body.error.code;
        } else {
            o.module = r.body.module;
            const w = weightsOf(r.body);
            if (w !== undefined && Array.isArray(w)) {
                const shape: number[] = [];
                for (let x: unknown = w; Array.isArray(x); x = x[0]) shape.push(x.length);
                o.attn_weights = { rank: rank(w), shape };
            }
            if (isRank3(w)) {
                // The default nested reply, read as number[][][] by the
                // document's own types: each row of each head sums to 1 (up
                // to dropout and the reply's precision).
                const heads: number[][][] = w;
                for (const head of heads) for (const row of head) {
                    const sum = row.reduce((a, b) => a + b, 0);
                    if (!(sum > 0)) throw new Error(`${c.name}: a row of attn_weights sums to ${sum}`);
                }
                o.forms_checked = await checkForms(base, c);
            }
        }
        outcomes.push(o);
    }
    console.log(JSON.stringify({ outcomes }));
}

main().catch((e: unknown) => {
    console.log(JSON.stringify({ failure: String(e) }));
    process.exitCode = 1;
});
