/**
 * The error codes an OpenAPI error response declares, read the two ways the documents carry them: the `code` enum of
 * its schema (`allOf` of the Error component and the enum: what clients are generated from) and the
 * `- \`CODE\`: meaning` lines of its description (what people read).
 */
export type DocumentedResponse = {
  description?: string;
  content?: Record<string, { schema?: { allOf?: unknown[] } }>;
};

/** The `code` enum of the response's JSON schema; undefined when it has none. */
export function enumCodes(response: DocumentedResponse): string[] | undefined {
  const parts = response.content?.['application/json']?.schema?.allOf ?? [];
  for (const part of parts as Array<{ properties?: { code?: { enum?: unknown } } }>) {
    const codes = part.properties?.code?.enum;
    if (Array.isArray(codes)) return codes.map(String);
  }
  return undefined;
}

/** The codes the description lists as `- \`CODE\`: …` lines. */
export function describedCodes(response: DocumentedResponse): string[] {
  return [...(response.description ?? '').matchAll(/^- `([A-Za-z0-9_]+)`/gm)].map((m) => m[1]!);
}
