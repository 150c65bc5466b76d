/** What the EVM benchmarks set up: ready wallets through the API, and their funds on anvil. */

/** Funds addresses with 1 ETH each, in JSON-RPC batches of anvil_setBalance. */
export async function fund(rpcUrl: string, addresses: string[]): Promise<void> {
  for (let i = 0; i < addresses.length; i += 500) {
    const batch = addresses.slice(i, i + 500).map((a, j) => ({
      jsonrpc: '2.0',
      id: j,
      method: 'anvil_setBalance',
      params: [a, '0xde0b6b3a7640000'],
    }));
    const r = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(batch),
    });
    await r.text();
  }
}

/** Ready EVM wallets, created 32 at a time. */
export async function createWallets(url: string, headers: Record<string, string>, count: number, prefix: string) {
  const out: Array<{ id: string; address: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const r = await fetch(`${url}/v1/wallets`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ type: 'EVM', userIdentifier: `${prefix}-${i}`, userIdentifierType: 'CUSTOM_ID' }),
        });
        if (r.status !== 201) throw new Error(`wallet creation answered ${r.status}: ${await r.text()}`);
        out.push((await r.json()) as { id: string; address: string });
      }
    }),
  );
  return out;
}
