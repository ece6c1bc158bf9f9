// negative.ts - the generated types refuse what the server refuses, and take
// what it takes. Each line after a @ts-expect-error must be a type error: if
// the types ever accept it, the directive is unused and `tsc --strict` fails
// (tests/test_api_clients.c).
import { call } from "./api";
import type { Reply, RequestOf } from "./api";

export const refused = [
    // @ts-expect-error: a string among the inputs
    call("string in inputs", "/attention/simple", { inputs: [[0.5, "0.5"]] }),
    // @ts-expect-error: booleans are for masks, not for inputs
    call("boolean inputs", "/attention/simple", { inputs: [[true, false]] }),
    // @ts-expect-error: inputs of rank 4
    call("rank 4 inputs", "/attention/causal", { d_out: 2, inputs: [[[[1, 2]]]] }),
    // @ts-expect-error: an unknown field
    call("unknown field", "/attention/simple", { inputs: [[1, 2]], d_outt: 2 }),
    // @ts-expect-error: a field of another endpoint
    call("field of another endpoint", "/attention/simple", { inputs: [[1, 2]], num_heads: 2 }),
    // @ts-expect-error: an output that does not exist
    call("unknown output", "/attention/simple", { inputs: [[1, 2]], return: ["weights"] }),
    // @ts-expect-error: a missing required field (causal needs d_out)
    call("missing d_out", "/attention/causal", { inputs: [[1, 2]] }),
];

// Fields with a default stay optional; masks take booleans, "-inf" and null.
export const accepted: RequestOf<"/attention/sdpa"> = {
    query: [[1, 0]], key: [[1, 0], [0, 1]], value: [[1], [2]],
    attn_mask: [[false, "-inf"]], key_padding_mask: [0, 1],
};

// The params of a reply go back as a request's state_dict, in every form.
export function roundTrip(r: Reply): RequestOf<"/attention/causal"> | undefined {
    return r.params === undefined ? undefined : { d_out: 2, inputs: [[1, 2]], state_dict: r.params };
}

export function unchecked(r: Reply): number[][][] | undefined {
    // @ts-expect-error: attn_weights may be of rank 2 to 4, flat or base64: a reader narrows it
    const w: number[][][] | undefined = r.attn_weights;
    return w;
}

// @ts-expect-error: a reply tensor holds numbers, not booleans or "-inf"
export const notAReply: Reply["attn_weights"] = [[true, "-inf"]];
