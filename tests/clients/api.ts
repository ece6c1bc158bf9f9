// api.ts - what a TypeScript client takes from the types openapi-typescript
// generates from GET /openapi.json (openapi.ts, written by
// tests/test_api_clients.c with the generator's default options).
import type { components, paths } from "./openapi";

export type Schemas = components["schemas"];

/** The compute endpoints: "/attention/simple", ..., "/attention/sdpa". */
export type Endpoint = Extract<keyof paths, `/attention/${string}`>;

/** The JSON body of a POST to path P. */
export type RequestOf<P extends Endpoint> = paths[P]["post"]["requestBody"]["content"]["application/json"];

/** A 200 reply of any compute endpoint, and the body of every error. */
export type Reply = paths[Endpoint]["post"]["responses"][200]["content"]["application/json"];
export type ApiError = Schemas["Error"];

/** A tensor output: nested arrays of rank 2 to 4, flat or base64. */
export type Tensor = Schemas["ReplyTensor"];

export interface Call {
    name: string;
    path: Endpoint;
    body: RequestOf<Endpoint>;
}

/** One request, its body type-checked against its path's schema (an unknown
 * field, a misspelt enum value or a string among the numbers is an error). */
export function call<P extends Endpoint>(name: string, path: P, body: RequestOf<P>): Call {
    return { name, path, body };
}
