// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// Never deployed. Its init code, with the constructor's arguments appended, is sent as an eth_call without a
/// recipient (chains/evm/read-yield-position.ts): the constructor runs in the state of the block the call names,
/// reads there everything a yield position needs, and returns the answer as the would-be contract's code. One call
/// thus answers from one state and names its block, where separate calls at `latest`, even batched, may straddle a
/// new block. Compiled by fixtures/contracts/compile.ts into YieldSnapshotReader.json.
contract YieldSnapshotReader {
    /// `target` answered `selector` with a revert, no code or too short an answer.
    error ReadFailed(address target, bytes4 selector);

    struct Snapshot {
        uint256 blockNumber;
        uint256 blockTimestamp;
        /// Pool.getReserveData(asset): the 15 words of Aave v3's ReserveDataLegacy.
        bytes reserveData;
        /// Pool.getUserAccountData(account): six words; the second is the debt in the base currency.
        bytes accountData;
        /// aToken.balanceOf(account): the supplied balance with its interest (zero when the asset is not listed).
        uint256 suppliedBalance;
        /// aToken.totalSupply().
        uint256 totalSupplied;
        /// asset.balanceOf(account) and asset.allowance(account, pool).
        uint256 walletBalance;
        uint256 allowance;
        /// The account's native balance, for gas.
        uint256 nativeBalance;
        /// asset.balanceOf(aToken): the underlying the aToken holds.
        uint256 aTokenUnderlying;
        /// Pool.getVirtualUnderlyingBalance(asset) where the pool has it (v3.1 on).
        bool hasVirtualBalance;
        uint256 virtualBalance;
    }

    constructor(address pool, address asset, address account) {
        Snapshot memory s;
        s.blockNumber = block.number;
        s.blockTimestamp = block.timestamp;
        // getReserveData(address)
        s.reserveData = _read(pool, 0x35ea6a75, abi.encode(asset), 15 * 32);
        // getUserAccountData(address)
        s.accountData = _read(pool, 0xbf92857c, abi.encode(account), 6 * 32);
        // balanceOf(address), allowance(address,address)
        s.walletBalance = _readWord(asset, 0x70a08231, abi.encode(account));
        s.allowance = _readWord(asset, 0xdd62ed3e, abi.encode(account, pool));
        s.nativeBalance = account.balance;
        address aToken = _address(s.reserveData, 8);
        if (aToken != address(0)) {
            s.suppliedBalance = _readWord(aToken, 0x70a08231, abi.encode(account));
            // totalSupply()
            s.totalSupplied = _readWord(aToken, 0x18160ddd, "");
            s.aTokenUnderlying = _readWord(asset, 0x70a08231, abi.encode(aToken));
            // getVirtualUnderlyingBalance(address): absent before v3.1, so its failure is an answer too.
            (bool ok, bytes memory virtualBalance) =
                pool.staticcall(abi.encodePacked(bytes4(0x6fb07f96), abi.encode(asset)));
            if (ok && virtualBalance.length >= 32) {
                s.hasVirtualBalance = true;
                s.virtualBalance = abi.decode(virtualBalance, (uint256));
            }
        }
        bytes memory out = abi.encode(s);
        assembly {
            return(add(out, 32), mload(out))
        }
    }

    function _read(address target, bytes4 selector, bytes memory args, uint256 minLength)
        private
        view
        returns (bytes memory answer)
    {
        bool ok;
        (ok, answer) = target.staticcall(abi.encodePacked(selector, args));
        if (!ok || answer.length < minLength) revert ReadFailed(target, selector);
    }

    function _readWord(address target, bytes4 selector, bytes memory args) private view returns (uint256) {
        return abi.decode(_read(target, selector, args, 32), (uint256));
    }

    function _address(bytes memory data, uint256 word) private pure returns (address) {
        return address(uint160(uint256(bytes32(_slice32(data, word)))));
    }

    function _slice32(bytes memory data, uint256 word) private pure returns (bytes32 value) {
        assembly {
            value := mload(add(add(data, 32), mul(word, 32)))
        }
    }
}
