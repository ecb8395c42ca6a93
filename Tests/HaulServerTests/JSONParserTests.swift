import Foundation
import HaulAPI
import HaulCore
import Testing

/// The JSON-RPC parser reads what Foundation's decoder read, the same way, and refuses what is
/// not JSON with the byte offset, however deep or strange the input.
@Suite(.timeLimit(.minutes(1))) struct JSONParserTests {
    static let valid = [
        #"{"jsonrpc":"2.0","id":"q","method":"aria2.addUri","params":["token:x",["http://h/a?b=c"],{"out":"a.bin","split":"4"},0]}"#,
        #"[{"id":1,"method":"system.multicall","params":[[{"methodName":"aria2.tellActive","params":["token:x",["gid"]]}]]}]"#,
        #" { "a" : [ 1 , -2 , 3.5 , -0.25 , 1e2 , 1.0 , 12345678901234 , true , false , null ] , "b" : { } , "c" : [ ] } "#,
        #""caf\u00e9 \ud83d\ude00 \"quoted\" \\ \/ \b\f\n\r\t""#,
        #""déjà vu, 日本語, 😀""#,
        #"{"k":1,"k":2}"#,
        "9223372036854775807", "-9223372036854775808", "99999999999999999999", "0", "-0", "1.5e-3",
    ]

    @Test(arguments: valid) func readsWhatFoundationRead(_ text: String) throws {
        let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(try JSONParser.parse(Array(text.utf8)) == foundation)
    }

    @Test func numbersKeepTheirKind() throws {
        #expect(try JSONParser.parse(Array("42".utf8)) == .integer(42))
        #expect(try JSONParser.parse(Array("2.0".utf8)) == .integer(2))
        #expect(try JSONParser.parse(Array("2.5".utf8)) == .number(2.5))
        #expect(try JSONParser.parse(Array("1e300".utf8)) == .number(1e300))
    }

    static let invalid: [(String, Int)] = [
        ("", 0), ("{", 1), (#"{"a" 1}"#, 5), ("[1,]", 3), ("[1 2]", 3), ("01", 1), ("1.", 2), ("-", 1), ("1e", 2),
        ("tru", 0), ("nul", 0), (#"{"a":1}x"#, 7), (#""\ud800""#, 7), (#""\udc00""#, 7), (#""\x""#, 3),
        ("\"a\u{01}b\"", 2), (#""abc"#, 4), ("{1:2}", 1), ("[1]]", 3),
    ]

    @Test(arguments: invalid) func refusesWhatIsNotJSON(_ text: String, _ offset: Int) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(text.utf8)) }
        do {
            _ = try JSONParser.parse(Array(text.utf8))
        } catch {
            #expect(error.offset == offset, "\(text): \(error)")
        }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    /// A hostile client's nesting is refused at a fixed depth, not followed down the stack.
    @Test func refusesNestingDeeperThanTheLimit() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(deep.utf8)) }
        let allowed =
            String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(try JSONParser.parse(Array(allowed.utf8)) != .null)
        let objects =
            String(repeating: #"{"a":"#, count: JSONParser.maxDepth + 1) + "1"
            + String(repeating: "}", count: JSONParser.maxDepth + 1)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(objects.utf8)) }
    }
}
