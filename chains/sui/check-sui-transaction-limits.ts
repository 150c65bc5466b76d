import { ChainInputError } from '../chain-input-error.ts';

/**
 * Bounds on a Sui TransactionData the service signs: the network's own (Sui protocol config, where one exists) and
 * two of ours on counts the protocol leaves to the transaction's size. Together they bound the work of decoding
 * it: the SDK's BCS codec renders every type argument as a string, level by level, so deeply nested type tags cost
 * the square of their depth.
 */
export const SUI_TRANSACTION_LIMITS = {
  /** Inputs of any kind. Sui caps object inputs at 2048 (max_input_objects); we apply it to all inputs. */
  inputs: 2048,
  /** Bytes of one pure input (max_pure_argument_size). */
  pureBytes: 16 * 1024,
  /** Commands (max_programmable_tx_commands). */
  commands: 1024,
  /** Arguments of one command (max_arguments). */
  argumentsPerCommand: 512,
  /** Arguments of all commands together (ours). */
  arguments: 8192,
  /** Type arguments of one command (max_type_arguments). */
  typeArguments: 16,
  /** Nesting of one type argument, `u8` being 1 and `vector<u8>` 2 (max_type_argument_depth). */
  typeDepth: 16,
  /** Type parameters of one struct type (max_generic_instantiation_length). */
  typeParameters: 32,
  /** Type tags in one type argument, however nested (ours). */
  typeNodes: 256,
  /** Type tags of all type arguments together (ours): the SDK renders each as a string, nested ones many times. */
  typeTags: 8192,
  /** Bytes of a module, function or struct name (max_move_identifier_len). */
  identifierBytes: 128,
  /** Modules of one Publish or Upgrade (max_modules_in_publish). */
  modules: 128,
  /** Package dependencies of one Publish or Upgrade. */
  dependencies: 256,
  /** Gas payment objects (max_gas_payment_objects). */
  gasPayment: 256,
} as const;

const L = SUI_TRANSACTION_LIMITS;
const ADDRESS_BYTES = 32;
const COMMANDS = ['MoveCall', 'TransferObjects', 'SplitCoins', 'MergeCoins', 'Publish', 'MakeMoveVec', 'Upgrade'];

function invalid(problem: string): ChainInputError {
  return new ChainInputError(`transaction is not valid BCS TransactionData: ${problem}`, 'transaction');
}

/** `problem` about a part of the transaction, or about the transaction itself when it starts with "has". */
function overLimit(problem: string): ChainInputError {
  return new ChainInputError(`transaction${problem.startsWith('has ') ? ' ' : ': '}${problem}`, 'transaction');
}

/** Reads BCS without building anything: lengths and tags only, each checked before what they announce is skipped. */
class Reader {
  private offset = 0;
  arguments = 0;
  typeTags = 0;
  constructor(private readonly bytes: Uint8Array) {}

  skip(length: number, what: string): void {
    if (this.offset + length > this.bytes.length) throw invalid(`it ends inside ${what}`);
    this.offset += length;
  }

  /** ULEB128 as BCS writes lengths and enum tags (u32). Non-canonical forms are left to the re-encoding check. */
  uleb(what: string): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.bytes[this.offset++];
      if (byte === undefined) throw invalid(`it ends inside ${what}`);
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) {
        if (value > 0xffff_ffff) break;
        return value;
      }
    }
    throw invalid(`${what} is not a valid ULEB128 length`);
  }

  tag(what: string, variants: number): number {
    const tag = this.uleb(what);
    if (tag >= variants) throw invalid(`unknown ${what} variant ${tag}`);
    return tag;
  }

  /** A vector's length: `owner` (the transaction itself when empty) has `count` `items`, refused above `limit`. */
  count(owner: string, items: string, limit: number): number {
    const count = this.uleb(`${owner || 'transaction'} ${items}`);
    if (count > limit) {
      throw overLimit(`${owner ? `${owner} ` : ''}has ${count} ${items}; at most ${limit} are accepted`);
    }
    return count;
  }

  bytesVector(what: string, limit = Number.POSITIVE_INFINITY): void {
    const length = this.uleb(what);
    if (length > limit) throw overLimit(`${what} is ${length} bytes; at most ${limit} are accepted`);
    this.skip(length, what);
  }

  identifier(what: string): void {
    this.bytesVector(what, L.identifierBytes);
  }

  objectRef(what: string): void {
    this.skip(ADDRESS_BYTES + 8, what);
    this.bytesVector(`${what} digest`);
  }

  argument(command: string): void {
    if (++this.arguments > L.arguments) {
      throw overLimit(
        `its commands have more than ${L.arguments} arguments in all; at most ${L.arguments} are accepted`,
      );
    }
    // Argument: GasCoin | Input(u16) | Result(u16) | NestedResult(u16, u16).
    const tag = this.tag(`${command} argument`, 4);
    this.skip(tag === 0 ? 0 : tag === 3 ? 4 : 2, `${command} argument`);
  }

  argumentVector(command: string): void {
    const count = this.count(command, 'arguments', L.argumentsPerCommand);
    for (let i = 0; i < count; i++) this.argument(command);
  }

  /** One TypeTag at `depth` (1 for a type argument itself); returns the tags read, this one included. */
  typeTag(command: string, depth: number, nodes: number): number {
    if (depth > L.typeDepth) {
      throw overLimit(
        `${command} has a type argument nested more than ${L.typeDepth} levels deep; at most ${L.typeDepth} are accepted`,
      );
    }
    if (nodes >= L.typeNodes) {
      throw overLimit(
        `${command} has a type argument of more than ${L.typeNodes} type tags; at most ${L.typeNodes} are accepted`,
      );
    }
    if (++this.typeTags > L.typeTags) {
      throw overLimit(
        `its type arguments have more than ${L.typeTags} type tags in all; at most ${L.typeTags} are accepted`,
      );
    }
    let read = 1;
    // TypeTag: bool, u8, u64, u128, address, signer, vector(TypeTag), struct(StructTag), u16, u32, u256.
    const tag = this.tag(`${command} type tag`, 11);
    if (tag === 6) read += this.typeTag(command, depth + 1, nodes + read);
    if (tag === 7) {
      // StructTag { address, module, name, typeParams: vector<TypeTag> }.
      this.skip(ADDRESS_BYTES, `${command} struct type`);
      this.identifier(`${command} struct module name`);
      this.identifier(`${command} struct name`);
      const params = this.count(`${command} struct type`, 'type parameters', L.typeParameters);
      for (let i = 0; i < params; i++) read += this.typeTag(command, depth + 1, nodes + read);
    }
    return read;
  }

  modules(command: string): void {
    const modules = this.count(command, 'modules', L.modules);
    for (let i = 0; i < modules; i++) this.bytesVector(`${command} module ${i}`);
    const dependencies = this.count(command, 'dependencies', L.dependencies);
    this.skip(dependencies * ADDRESS_BYTES, `${command} dependencies`);
  }

  command(index: number): void {
    const tag = this.tag('command', COMMANDS.length);
    const name = `command ${index} (${COMMANDS[tag]})`;
    switch (tag) {
      case 0: {
        // MoveCall { package, module, function, typeArguments, arguments }.
        this.skip(ADDRESS_BYTES, name);
        this.identifier(`${name} module name`);
        this.identifier(`${name} function name`);
        const types = this.count(name, 'type arguments', L.typeArguments);
        for (let i = 0; i < types; i++) this.typeTag(name, 1, 0);
        this.argumentVector(name);
        return;
      }
      case 1: // TransferObjects { objects, address }
        this.argumentVector(name);
        this.argument(name);
        return;
      case 2: // SplitCoins { coin, amounts }
      case 3: // MergeCoins { destination, sources }
        this.argument(name);
        this.argumentVector(name);
        return;
      case 4: // Publish { modules, dependencies }
        this.modules(name);
        return;
      case 5: // MakeMoveVec { type: Option<TypeTag>, elements }
        if (this.tag(`${name} type`, 2) === 1) this.typeTag(name, 1, 0);
        this.argumentVector(name);
        return;
      default: // Upgrade { modules, dependencies, package, ticket }
        this.modules(name);
        this.skip(ADDRESS_BYTES, name);
        this.argument(name);
    }
  }

  transactionData(): void {
    this.tag('TransactionData', 1); // V1
    // TransactionKind: ProgrammableTransaction { inputs, commands }, or one of three system kinds without payload.
    if (this.tag('TransactionKind', 4) === 0) {
      const inputs = this.count('', 'inputs', L.inputs);
      for (let i = 0; i < inputs; i++) {
        if (this.tag('CallArg', 2) === 0) {
          this.bytesVector(`input ${i} (pure)`, L.pureBytes);
        } else {
          // ObjectArg: ImmOrOwnedObject(ref) | SharedObject { id, initialSharedVersion, mutable } | Receiving(ref).
          const kind = this.tag('ObjectArg', 3);
          if (kind === 1) this.skip(ADDRESS_BYTES + 8 + 1, `input ${i}`);
          else this.objectRef(`input ${i}`);
        }
      }
      const commands = this.count('', 'commands', L.commands);
      for (let i = 0; i < commands; i++) this.command(i);
    }
    this.skip(ADDRESS_BYTES, 'sender');
    // GasData { payment: vector<ObjectRef>, owner, price, budget }.
    const payment = this.count('its gas data', 'payment objects', L.gasPayment);
    for (let i = 0; i < payment; i++) this.objectRef('gas payment');
    this.skip(ADDRESS_BYTES + 8 + 8, 'gas data');
    // TransactionExpiration: None | Epoch(u64).
    if (this.tag('TransactionExpiration', 2) === 1) this.skip(8, 'expiration');
  }
}

/**
 * Walks BCS TransactionData and refuses it, with a `ChainInputError` (field `transaction`) naming the part, when
 * it exceeds `SUI_TRANSACTION_LIMITS` or ends early. A linear pass that builds nothing, run before the SDK decodes
 * the bytes. Trailing bytes and non-canonical lengths are not its concern: the re-encoding check refuses them.
 */
export function checkSuiTransactionLimits(bytes: Uint8Array): void {
  new Reader(bytes).transactionData();
}
